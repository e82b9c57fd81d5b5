// Calibrated link presets: the effective bandwidth a link technology delivers to collective
// traffic, set once from published nccl-tests figures (validation/data/nccl_busbw.yaml) and used
// unchanged for every operation, algorithm and size. The software latencies of the collectives
// (per step, per operation) are calibrated here too.
//
// A topology link is matched to a preset by its link class name and line rate ("nvlink" at
// 450 GB/s per direction is NVLink4). The flow network then gets the preset's effective bandwidth;
// the link keeps the topology's per-hop latency. Links whose class the user gave an efficiency
// keep line rate x efficiency: an explicit setting wins over calibration.
//
// Why effective rather than line rate: in this flow model an uncontended ring's bus bandwidth
// equals the per-link bandwidth (docs/collectives.md), so the ring busbw that nccl-tests measures
// IS the effective per-direction link bandwidth. In-switch reduction (NVLS) moves data with
// multimem operations whose throughput is lower again; `in_switch` is the effective bandwidth of a
// member's link for traffic to and from the reducing switch.
//
// Reduction throughput: on A100, nccl-tests' AllReduce busbw (232) sits below AllGather and
// AllToAll (254) on the same NVLink3 node, so the reducing kernels, not NVLink, bound it. A
// preset's `reduction` becomes one extra flow-network link per accelerator (topology_network.hpp)
// that every transfer of a reducing plan into that accelerator also crosses: such transfers share
// it, copies do not.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sim/collectives/plan/plan_options.hpp"
#include "sim/common/units.hpp"

namespace stepsim::collectives {

struct LinkPreset {
  std::string name;        // "nvlink4"
  std::string link_class;  // topology link class it applies to: "nvlink", "ib"
  BytesPerSecond line_rate;
  BytesPerSecond effective;
  std::optional<BytesPerSecond> in_switch;  // for traffic to/from a reducing switch
  std::string source;                       // the data file entry it comes from
  // Reduction throughput of an accelerator reached over this technology: the rate at which it
  // takes in the data of a reducing collective (AllReduce, ReduceScatter, Reduce), when that is
  // below `effective` (its collective kernels, not the wire, are the bound); nullopt otherwise.
  std::optional<BytesPerSecond> reduction;
};

struct Calibration {
  std::vector<LinkPreset> links;
  // Software latencies of the collectives (PlanOptions::step_latency, op_latency).
  Time step_latency;
  Time op_latency;
  std::string latency_source;
  // PlanOptions::nvls_step_overhead and where it comes from.
  Bytes nvls_step_overhead = Bytes(0);
  std::string nvls_source;
  // NCCL's protocol model (PlanOptions::protocol): kAuto when calibrated, kOff at line rate.
  ProtocolChoice protocol = ProtocolChoice::kOff;

  // The preset for a link of `link_class` at `line_rate` (within 1%), if any.
  const LinkPreset* find(std::string_view link_class, BytesPerSecond line_rate) const;
  // PlanOptions with the calibrated latencies, NVLS step cost and protocol model (chunking and
  // channels at their defaults).
  PlanOptions plan_options() const;
};

// NVLink4 (H100/H200), NVLink3 (A100), InfiniBand 200G HDR and 400G NDR NICs.
Calibration calibrated_presets();
// No calibration: links at line rate x class efficiency, PlanOptions' default latencies.
Calibration line_rate_presets();

}  // namespace stepsim::collectives
