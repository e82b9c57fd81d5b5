// NCCL's tuner: its closed-form cost model of every algorithm x protocol, and the choice it makes
// from it (NVIDIA/nccl v2.20.3, src/graph/tuning.cc: ncclTopoTuneModel sets a latency and a
// bandwidth per collective, algorithm and protocol; ncclTopoGetAlgoTime predicts
// latency + bytes / bandwidth; enqueue.cc takes the fastest). stepsim uses the model only to
// choose, as NCCL does; the time of the chosen plan comes from the flow simulation, where the
// protocol's latencies and wire overheads are charged on the transfers (protocol.hpp).
//
// The model's inputs come from the group's shape: ranks, domains (NCCL's nodes), ranks per
// domain, and the first member's scale-up and NIC bandwidths (GroupShape), which stand for NCCL's
// nChannels x bwIntra and nChannels x bwInter. Constants not in protocol.hpp: llMaxBws (87.7 GB/s
// on one node of Ampere or Hopper; 39.0 on 2 nodes, 20.4 on more, for Intel hosts as on DGX
// H100), the ring/tree/NVLS bandwidth ratios and refinements, netOverhead 1 us (x3 for Simple),
// treeCorrectionFactor, the multi-node ring Simple AllReduce latency x1.4. One addition from
// NCCL 2.23+: PAT for AllGather and ReduceScatter at one GPU per node (its latency formula and its
// x0.75), which those versions' `auto` takes where the model says, as ZeRO's data-parallel
// AllGathers across nodes.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "sim/collectives/plan/group_shape.hpp"
#include "sim/collectives/plan/operation.hpp"
#include "sim/collectives/plan/plan_options.hpp"
#include "sim/collectives/plan/protocol.hpp"

namespace stepsim::collectives {

struct NcclChoice {
  NcclAlgorithm algorithm = NcclAlgorithm::kRing;
  Protocol protocol = Protocol::kSimple;
  double predicted_us =
      0;  // NCCL's predicted time, microseconds (a double: huge sizes stay finite)
};

// Whether NCCL 2.20 would run `algorithm` for the operation on the group: Ring for AllReduce,
// AllGather, ReduceScatter, Broadcast and Reduce; Tree for AllReduce; NVLS (AllReduce,
// AllGather, ReduceScatter) inside one domain with a reducing switch, or across domains that
// each have one when the network reduces too (NCCL enables multi-node NVLS with CollNet only);
// NVLS-tree (AllReduce) across domains that each have a reducing switch; CollNet (AllReduce)
// across domains when the network reduces (SHARP); and, from NCCL 2.23's model, PAT (AllGather,
// ReduceScatter) for groups of one member per domain (one GPU per node).
bool nccl_enabled(const Operation& op, const GroupShape& group, NcclAlgorithm algorithm);

// NCCL's `minCompCap >= 90` (Hopper or later), as stepsim infers it: NVLink SHARP (a reducing
// NVSwitch) came with Hopper's third-generation NVSwitch, so a group whose domains all have one (or
// whose one domain has one) runs on Hopper or later.
bool nccl_hopper_or_later(const GroupShape& group);

// NCCL's predicted time in microseconds, or nullopt when the combination is not enabled
// (nccl_enabled, and nccl_supports for the protocol).
std::optional<double> nccl_predicted_time_us(const Operation& op, const GroupShape& group,
                                             NcclAlgorithm algorithm, Protocol protocol);

// NCCL's bandwidth ceiling for the combination beyond what its links carry: the protocol's copy
// loop and the per-channel limits of its cost model (LL's min(llMaxBw, bw/4) on rings; across
// nodes LL128 rings at nChannels x perChMaxRingLL128Bw; trees at NCCL's whole tree bandwidth, with
// the per-channel ceilings and the size's correction factor), as an algorithm bandwidth: the
// operation's size over the time its bandwidth term takes. nullopt where none applies (Simple
// rings, LL128 rings on one node, NVLS, CollNet) or the combination is not enabled. The flow
// simulation holds each member's sends to it (plan.hpp, send ceilings).
std::optional<BytesPerSecond> nccl_algorithm_ceiling(const Operation& op, const GroupShape& group,
                                                     NcclAlgorithm algorithm, Protocol protocol);

// The fastest enabled combination among `algorithms` (each with every protocol, or `forced`
// only), as NCCL takes it: the first strictly faster in the order given, protocols in the order
// LL, LL128, Simple. nullopt when none is enabled.
std::optional<NcclChoice> nccl_choose(const Operation& op, const GroupShape& group,
                                      std::span<const NcclAlgorithm> algorithms,
                                      std::optional<Protocol> forced = std::nullopt);

// `base` for a plan of `algorithm` with `protocol` (protocol.hpp): NCCL's base latency as the
// operation latency, its per-step hardware latency (NVLink inside a domain; the network's across
// domains, and on multi-domain rings at least NCCL's network overhead on intra steps too), the
// protocol's slice as chunk size, and the protocol fixed (the choice resolved).
PlanOptions nccl_plan_options(const PlanOptions& base, NcclAlgorithm algorithm, Protocol protocol,
                              const GroupShape& group);

// An NCCL version "MAJOR.MINOR" or "MAJOR.MINOR.PATCH" (2.20 to 2.99) as NCCL codes it
// (major x 10000 + minor x 100 + patch); nullopt otherwise, or below the model's 2.20.
std::optional<std::uint32_t> parse_nccl_version(std::string_view text);
// "2.23.4".
std::string nccl_version_string(std::uint32_t code);

// The forced protocol of a choice; nullopt for kAuto and kOff.
std::optional<Protocol> forced_protocol(ProtocolChoice choice);
// "auto", "off", or a protocol's name (parse_protocol), case-insensitive; nullopt otherwise.
std::optional<ProtocolChoice> parse_protocol_choice(std::string_view text);

}  // namespace stepsim::collectives
