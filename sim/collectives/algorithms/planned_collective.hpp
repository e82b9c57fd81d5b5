// One entry point that turns an operation into the plan that runs, with NCCL's protocol model
// when it is on: `stepsim collective`, `stepsim validate` and every collective of a training step
// plan through it, so nothing uses a different cost.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "sim/collectives/algorithms/algorithm.hpp"
#include "sim/collectives/plan/protocol.hpp"

namespace stepsim::collectives {

struct PlannedCollective {
  Plan plan;
  // The registry algorithm that built the plan, with its protocol: "ring/LL128",
  // "in-switch/Simple", or "direct" (no protocol model for it).
  std::string label;
};

// The NCCL algorithm a registry algorithm stands for: ring, ring-fluid, hierarchical and
// hierarchical-pipelined (rings) -> Ring, tree -> Tree, in-switch -> NVLS, nvls-tree -> NVLSTree;
// nullopt for the others (direct, mesh, halving-doubling), which run without a protocol.
std::optional<NcclAlgorithm> nccl_algorithm_of(std::string_view registry_name);

// Plans `op` on `group` with `algorithm` (`auto` resolved with `options`). With
// options.protocol != kOff and an algorithm NCCL has, the protocol is the forced one or NCCL's
// tuner's choice for that algorithm, and the plan gets its latencies, chunk size and wire
// overhead (nccl_plan_options, Plan::set_protocol). Point-to-point operations (AllToAll(v),
// Send/Recv) get NCCL's p2p protocol, LL up to 16 KiB per peer and Simple above, as wire bytes
// only. Throws InputError when a forced protocol does not run with the algorithm (NVLS with LL).
PlannedCollective plan_collective(const Algorithm& algorithm, const Operation& op,
                                  const GroupShape& group, const PlanOptions& options);

}  // namespace stepsim::collectives
