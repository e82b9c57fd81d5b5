#include "sim/collectives/nccl/nccl_tuner.hpp"

#include <algorithm>
#include <bit>
#include <cctype>
#include <limits>
#include <string>

namespace stepsim::collectives {
namespace {

// tuning.cc llMaxBws: [one node: Ampere/Hopper GPUs; two nodes, more: Intel hosts], GB/s.
constexpr double kLlMaxBw[3] = {87.7, 39.0, 20.4};
// tuning.cc treeCorrectionFactor[protocol][log2(bytes / 64)], for 64 B to 256 MiB.
constexpr double kTreeCorrection[3][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7,  .7,  .7,  .6, .5,
     .4,  .4,  .5,  .6,  .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7,  .6, .6,
     .6,  .6,  .6,  .6,  .8,  .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}};
// tuning.cc getNetOverhead: 1 us per network post on Intel hosts (x3 for Simple).
constexpr double kNetOverheadUs = 1.0;
// PAT's cost model (NCCL 2.23+ tuning.cc; PAT is not in 2.20.3): latency 8 us + log2(nodes) x
// interLat / 3.5 + 2.8 us per rank, where interLat is the tree's network latency for Simple (14 us:
// "with ppn=1 latencies are fully exposed, use the Tree network latency"); bandwidth 0.75 of the
// ring's bus bandwidth, not converted to an algorithm bandwidth (AllGather and ReduceScatter
// other than Ring keep busBw).
constexpr double kPatBaseUs = 8.0;
constexpr double kPatStepUs = 14.0 / 3.5;
constexpr double kPatPerRankUs = 2.8;
constexpr double kPatBusFactor = 0.75;
// The per-channel ceilings of tuning.cc (GB/s per graph channel), [Ampere, Hopper]; the tree's by
// nodes [1, 2, more]. perChMaxRingLL128Bws, perChMaxTreeBws, perChMaxTreeLL128Bws.
constexpr double kPerChannelRingLL128[2] = {20.0, 36.7};
constexpr double kPerChannelTree[2][3] = {{24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}};
constexpr double kPerChannelTreeLL128[2][3] = {{20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}};

int log2i(std::int64_t x) {
  return x <= 0 ? -1 : std::bit_width(static_cast<std::uint64_t>(x)) - 1;
}

struct Shape {
  std::uint32_t ranks;
  std::uint32_t nodes;
  double ppn;
  double intra;     // GB/s, the scale-up bandwidth of a member
  double node_net;  // GB/s, a domain's NICs together
  // NCCL's `minCompCap >= 90` (Hopper or later). stepsim knows the GPU generation by its
  // scale-up switch: NVLink SHARP (a reducing NVSwitch) came with Hopper's third-generation
  // NVSwitch, so a group whose domains all have one runs on Hopper or later.
  bool hopper;
  // NCCL's own figure for the scale-up bandwidth, GB/s: `intra` x NCCL's NVLink figure over the
  // link's line rate (nccl_nvlink_gbps: NCCL's graph search builds its rings and trees on it, so
  // its nChannels x bwIntra on one DGX A100 is 12 x 20 = 240 GB/s, not 300).
  double nccl_intra;
};

Shape shape_of(const GroupShape& group) {
  Shape s;
  s.ranks = group.size;
  s.nodes = std::max<std::uint32_t>(group.num_domains(), 1);
  s.ppn = static_cast<double>(s.ranks) / s.nodes;
  s.intra = group.scale_up_bandwidth.gigabytes_per_second();
  s.node_net = s.ppn * group.scale_out_bandwidth.gigabytes_per_second();
  if (s.intra <= 0) s.intra = s.node_net > 0 ? s.node_net : 1.0;
  if (s.node_net <= 0) s.node_net = s.intra;
  s.hopper = nccl_hopper_or_later(group);
  const NvlinkGeneration generation = nvlink_generation(s.intra, s.hopper);
  s.nccl_intra = group.scale_up_bandwidth.value() > 0
                     ? s.intra * nccl_nvlink_gbps(generation) / nvlink_line_gbps(generation)
                     : s.intra;
  return s;
}

bool is_ring_collective(CollectiveKind kind) {
  return kind == CollectiveKind::kAllReduce || kind == CollectiveKind::kAllGather ||
         kind == CollectiveKind::kReduceScatter || kind == CollectiveKind::kBroadcast ||
         kind == CollectiveKind::kReduce;
}

// tuning.cc's ratio of algorithm to bus bandwidth (busBw x ratio = algBw).
double bus_to_algorithm_ratio(const Operation& op, const Shape& s, NcclAlgorithm a) {
  if (a == NcclAlgorithm::kRing) {
    const double steps =
        op.kind == CollectiveKind::kAllReduce ? 2.0 * (s.ranks - 1)
        : op.kind == CollectiveKind::kAllGather || op.kind == CollectiveKind::kReduceScatter
            ? s.ranks - 1.0
            : s.ranks;
    return s.ranks / steps;
  }
  if (a == NcclAlgorithm::kNvls || a == NcclAlgorithm::kNvlsTree) return 5.0 / 6.0;
  if (a == NcclAlgorithm::kPat) return 1.0;
  return 0.5;
}

double tree_correction(Protocol p, std::int64_t bytes) {
  const int log_size = log2i(bytes >> 6);
  return log_size >= 0 && log_size < 23 ? kTreeCorrection[static_cast<int>(p)][log_size] : 1.0;
}

// NCCL's algorithm bandwidth (GB/s) for the combination: busBw with the model's refinements,
// times the bus-to-algorithm ratio.
double algorithm_bandwidth(const Operation& op, const Shape& s, NcclAlgorithm a, Protocol p) {
  const bool multi = s.nodes > 1;
  const int index2 = s.nodes <= 2 ? static_cast<int>(s.nodes) - 1 : 2;
  const double ll_max = kLlMaxBw[index2];
  double bus = 0;
  switch (a) {
    case NcclAlgorithm::kRing:
    case NcclAlgorithm::kTree:
    case NcclAlgorithm::kNvls:
    case NcclAlgorithm::kCollNetDirect:
    case NcclAlgorithm::kCollNetChain:
    case NcclAlgorithm::kPat:
      bus = multi ? std::min(s.nccl_intra, s.node_net) : s.nccl_intra;
      break;
    case NcclAlgorithm::kNvlsTree:
      bus = std::min(s.nccl_intra, s.nodes <= 2 ? s.node_net : s.node_net / 2);
      break;
  }
  const int gen = s.hopper ? 1 : 0;
  const double channels = s.ppn;  // across nodes: one graph channel per NIC (ceiling_gbps)
  const bool per_channel = multi && s.ppn >= 2;
  const bool allreduce = op.kind == CollectiveKind::kAllReduce;
  if (a == NcclAlgorithm::kRing && p == Protocol::kLL)
    bus = std::min(
        ll_max,
        bus * (multi || allreduce || op.kind == CollectiveKind::kReduce ? 1.0 / 4.0 : 1.0 / 3.0));
  if (a == NcclAlgorithm::kRing && p == Protocol::kLL128) {
    bus *= s.ppn < 2 ? 0.7 : 0.92;
    if (per_channel) bus = std::min(bus, channels * kPerChannelRingLL128[gen]);
  }
  if (a == NcclAlgorithm::kTree) {
    bus *= 0.92;
    if (per_channel) bus = std::min(bus, channels * kPerChannelTree[gen][index2]);
  }
  if (a == NcclAlgorithm::kTree && p == Protocol::kLL) bus = std::min(bus / 3.8, ll_max);
  if (a == NcclAlgorithm::kTree && p == Protocol::kLL128) {
    bus *= s.nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0;
    if (per_channel) bus = std::min(bus, channels * kPerChannelTreeLL128[gen][index2]);
  }
  if (a == NcclAlgorithm::kCollNetDirect && s.hopper) bus *= 0.85;  // minCompCap >= 90
  if (a == NcclAlgorithm::kPat) bus *= kPatBusFactor;
  return bus * bus_to_algorithm_ratio(op, s, a);
}

// The part of NCCL's algorithm bandwidth (GB/s) that its links do not carry: what the protocol's
// copy loop and one channel's thread blocks move (tuning.cc), for rings and trees. Rings: LL's
// whole term, min(llMaxBw, bw/4) (bw/3 for AllGather and ReduceScatter on one node), and across
// nodes LL128's nChannels x perChMaxRingLL128Bw alone (its x0.92 is about LL128's flag bytes,
// which the flow carries). Trees: NCCL's whole tree bandwidth with the size's correction factor,
// since the flow has none of it. nChannels: one graph channel per NIC of a node (NCCL's rail rings,
// one member per NIC; algorithm_bandwidth); on one node the per-channel ceilings are left out:
// NCCL's graph there has 12 channels of 20 GB/s on A100 (24 thread blocks printed), which puts
// them above what the NVLinks carry; on H100 the count is not printed in any source read (16, by
// inference from 32 thread blocks, would put them far above too). nullopt where nothing applies
// (Simple and one-node LL128 rings).
std::optional<double> ceiling_gbps(const Operation& op, const Shape& s, NcclAlgorithm a,
                                   Protocol p) {
  if (a == NcclAlgorithm::kTree)
    return algorithm_bandwidth(op, s, a, p) * tree_correction(p, op.size.count());
  // PAT: its x 0.75 is the kernel's, not the links'.
  if (a == NcclAlgorithm::kPat) return algorithm_bandwidth(op, s, a, p);
  if (a != NcclAlgorithm::kRing) return std::nullopt;
  if (p == Protocol::kLL) return algorithm_bandwidth(op, s, a, p);
  if (p == Protocol::kLL128 && s.nodes > 1 && s.ppn >= 2)
    return s.ppn * kPerChannelRingLL128[s.hopper ? 1 : 0] * bus_to_algorithm_ratio(op, s, a);
  return std::nullopt;
}

double latency_us(const Operation& op, const Shape& s, NcclAlgorithm a, Protocol p) {
  const auto us = [](Time t) { return t.microseconds(); };
  const double intra = us(nccl_hardware_latency(NcclHardware::kNvlink, a, p));
  const double inter = us(nccl_hardware_latency(NcclHardware::kNet, a, p));
  double lat = us(nccl_base_latency(a, p));
  const double ppn_steps = static_cast<double>(s.ranks) / s.nodes - 1;
  const int log_nodes = log2i(s.nodes);
  switch (a) {
    case NcclAlgorithm::kRing: {
      if (op.kind == CollectiveKind::kBroadcast || op.kind == CollectiveKind::kReduce)
        return lat + (s.nodes > 1 ? inter : intra);
      const bool allreduce = op.kind == CollectiveKind::kAllReduce;
      const double steps = allreduce ? 2.0 * (s.ranks - 1) : s.ranks - 1.0;
      const double inter_steps = allreduce ? (s.nodes > 1 ? 2.0 * s.nodes : 0.0) : s.nodes - 1.0;
      double intra_step = intra;
      if (s.nodes > 1)
        intra_step = std::max(intra, kNetOverheadUs * (p == Protocol::kSimple ? 3 : 1));
      return lat + (steps - inter_steps) * intra_step + inter_steps * inter;
    }
    case NcclAlgorithm::kTree:
      return lat + 2 * (ppn_steps * intra + log_nodes * inter);
    case NcclAlgorithm::kCollNetDirect:
      return lat + 2 * (std::min(1.0, ppn_steps) * intra + ppn_steps * 0.4) + inter;
    case NcclAlgorithm::kCollNetChain:
      return lat + 2 * ppn_steps * intra + inter;
    case NcclAlgorithm::kNvls:
      return intra + (s.nodes > 1 ? inter : 0.0);
    case NcclAlgorithm::kNvlsTree:
      return lat + intra + 2 * log_nodes * inter;
    case NcclAlgorithm::kPat:
      return kPatBaseUs + log_nodes * kPatStepUs + kPatPerRankUs * s.ranks;
  }
  return lat;
}

}  // namespace

bool nccl_hopper_or_later(const GroupShape& group) {
  return group.num_domains() > 1 ? group.domain_in_switch : group.in_switch_reduction;
}

bool nccl_enabled(const Operation& op, const GroupShape& group, NcclAlgorithm algorithm) {
  if (group.size < 2) return false;
  const bool allreduce = op.kind == CollectiveKind::kAllReduce;
  const bool multi = group.num_domains() > 1;
  switch (algorithm) {
    case NcclAlgorithm::kRing:
      return is_ring_collective(op.kind);
    case NcclAlgorithm::kTree:
      return allreduce;
    case NcclAlgorithm::kNvls:
      if (!allreduce && op.kind != CollectiveKind::kAllGather &&
          op.kind != CollectiveKind::kReduceScatter)
        return false;
      // Across domains NCCL runs NVLS only with CollNet (SHARP trees in the fabric), and for
      // AllReduce only here.
      if (multi)
        return allreduce && group.domain_in_switch && group.network_reduction &&
               group.network_tree.has_value();
      return group.in_switch_reduction;
    case NcclAlgorithm::kNvlsTree:
      return allreduce && multi && group.domain_in_switch;
    case NcclAlgorithm::kCollNetDirect:
    case NcclAlgorithm::kCollNetChain:
      return allreduce && multi && group.network_reduction && group.network_tree.has_value();
    case NcclAlgorithm::kPat:
      // ncclPatEnable: one GPU per node (nNodes == nRanks).
      return (op.kind == CollectiveKind::kAllGather || op.kind == CollectiveKind::kReduceScatter) &&
             group.num_domains() == group.size;
  }
  return false;
}

std::optional<double> nccl_predicted_time_us(const Operation& op, const GroupShape& group,
                                             NcclAlgorithm algorithm, Protocol protocol) {
  if (!nccl_enabled(op, group, algorithm) || !nccl_supports(algorithm, protocol))
    return std::nullopt;
  const Shape s = shape_of(group);
  double bw = algorithm_bandwidth(op, s, algorithm, protocol);
  double lat = latency_us(op, s, algorithm, protocol);
  if (bw <= 0) return std::nullopt;
  const std::int64_t bytes = op.size.count();
  if (algorithm == NcclAlgorithm::kTree) bw *= tree_correction(protocol, bytes);
  // "Plateau effect of ring" (nChannels taken as the ranks per domain, one ring per NIC).
  if (algorithm == NcclAlgorithm::kRing && protocol == Protocol::kSimple && s.nodes > 1 &&
      op.kind == CollectiveKind::kAllReduce && bytes / (s.ppn * s.ranks) >= 64)
    lat *= 1.4;
  return lat + static_cast<double>(bytes) / (1000.0 * bw);
}

std::optional<BytesPerSecond> nccl_algorithm_ceiling(const Operation& op, const GroupShape& group,
                                                     NcclAlgorithm algorithm, Protocol protocol) {
  if (!nccl_enabled(op, group, algorithm) || !nccl_supports(algorithm, protocol))
    return std::nullopt;
  // Only on known bandwidths: the tuner's stand-ins for a missing one are good for a choice, not
  // for a bound. Across nodes the ceilings are per NIC.
  const bool multi = group.num_domains() > 1;
  if (!(group.scale_up_bandwidth.value() > 0) && !multi) return std::nullopt;
  if (multi && !(group.scale_out_bandwidth.value() > 0)) return std::nullopt;
  const Shape s = shape_of(group);
  const auto ceiling = ceiling_gbps(op, s, algorithm, protocol);
  if (!ceiling || !(*ceiling > 0)) return std::nullopt;
  return BytesPerSecond(*ceiling * 1e9);
}

std::optional<NcclChoice> nccl_choose(const Operation& op, const GroupShape& group,
                                      std::span<const NcclAlgorithm> algorithms,
                                      std::optional<Protocol> forced) {
  std::optional<NcclChoice> best;
  for (NcclAlgorithm a : algorithms)
    for (Protocol p : kAllProtocols) {
      if (forced && p != *forced) continue;
      const auto t = nccl_predicted_time_us(op, group, a, p);
      if (t && (!best || *t < best->predicted_us)) best = NcclChoice{a, p, *t};
    }
  return best;
}

PlanOptions nccl_plan_options(const PlanOptions& base, NcclAlgorithm algorithm, Protocol protocol,
                              const GroupShape& group) {
  PlanOptions options = base;
  const bool multi = group.num_domains() > 1;
  options.op_latency = nccl_base_latency(algorithm, protocol);
  if (algorithm == NcclAlgorithm::kPat) {
    // PAT's latency model: the per-rank part once per operation, interLat / 3.5 per step.
    options.op_latency = Time::from_seconds((kPatBaseUs + kPatPerRankUs * group.size) * 1e-6);
    options.step_latency = Time::from_seconds(kPatStepUs * 1e-6);
    options.net_step_latency = options.step_latency;
    options.protocol = ProtocolChoice::kSimple;
    return options;
  }
  Time intra = nccl_hardware_latency(NcclHardware::kNvlink, algorithm, protocol);
  if (multi && algorithm == NcclAlgorithm::kRing)
    intra = std::max(
        intra, Time::from_seconds(kNetOverheadUs * 1e-6 * (protocol == Protocol::kSimple ? 3 : 1)));
  Time inter = nccl_hardware_latency(NcclHardware::kNet, algorithm, protocol);
  if (algorithm == NcclAlgorithm::kTree && protocol == Protocol::kSimple) {
    // NCCL's Tree/Simple hardware latency is "the latency of a 256kB chunk" (tuning.cc): the
    // chunk's transfer, which the flow simulation carries itself. Its step costs the ring's.
    intra = nccl_hardware_latency(NcclHardware::kNvlink, NcclAlgorithm::kRing, protocol);
    inter = nccl_hardware_latency(NcclHardware::kNet, NcclAlgorithm::kRing, protocol);
  }
  options.step_latency = intra;
  options.net_step_latency = inter;
  options.chunk_size = protocol_traits(protocol).slice;
  switch (protocol) {
    case Protocol::kLL:
      options.protocol = ProtocolChoice::kLL;
      break;
    case Protocol::kLL128:
      options.protocol = ProtocolChoice::kLL128;
      break;
    case Protocol::kSimple:
      options.protocol = ProtocolChoice::kSimple;
      break;
  }
  return options;
}

std::optional<std::uint32_t> parse_nccl_version(std::string_view text) {
  std::uint32_t parts[3] = {0, 0, 0};
  std::size_t count = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    if (count == 3) return std::nullopt;
    std::size_t digits = 0;
    std::uint32_t value = 0;
    for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i, ++digits) {
      value = value * 10 + static_cast<std::uint32_t>(text[i] - '0');
      if (digits >= 2) return std::nullopt;
    }
    if (digits == 0) return std::nullopt;
    parts[count++] = value;
    if (i < text.size()) {
      if (text[i] != '.' || i + 1 == text.size()) return std::nullopt;
      ++i;
    }
  }
  if (count < 2 || parts[0] != 2) return std::nullopt;
  const std::uint32_t code = parts[0] * 10000 + parts[1] * 100 + parts[2];
  if (code < kNcclModelVersion / 100 * 100) return std::nullopt;
  return code;
}

std::string nccl_version_string(std::uint32_t code) {
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." +
         std::to_string(code % 100);
}

std::optional<Protocol> forced_protocol(ProtocolChoice choice) {
  switch (choice) {
    case ProtocolChoice::kLL:
      return Protocol::kLL;
    case ProtocolChoice::kLL128:
      return Protocol::kLL128;
    case ProtocolChoice::kSimple:
      return Protocol::kSimple;
    default:
      return std::nullopt;
  }
}

std::optional<ProtocolChoice> parse_protocol_choice(std::string_view text) {
  if (const auto p = parse_protocol(text)) {
    switch (*p) {
      case Protocol::kLL:
        return ProtocolChoice::kLL;
      case Protocol::kLL128:
        return ProtocolChoice::kLL128;
      case Protocol::kSimple:
        return ProtocolChoice::kSimple;
    }
  }
  std::string lower(text);
  for (char& c : lower)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "auto") return ProtocolChoice::kAuto;
  if (lower == "off") return ProtocolChoice::kOff;
  return std::nullopt;
}

}  // namespace stepsim::collectives
