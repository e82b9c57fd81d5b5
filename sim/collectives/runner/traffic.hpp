// Point-to-point traffic on a topology, for `stepsim traffic`: flows between named nodes with
// sizes and start times, from a CSV file or a pattern over accelerators, run with contention on
// the calibrated flow network; the result gives every flow's start and finish and every link's
// utilization.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string_view>
#include <vector>

#include "sim/collectives/runner/link_calibration.hpp"
#include "topology/router.hpp"
#include "topology/topology.hpp"

namespace stepsim::collectives {

struct TrafficFlow {
  topology::NodeId src;
  topology::NodeId dst;
  Bytes bytes;
  Time start;
};

// Reads `src,dst,bytes,start` rows (a header line naming exactly those columns first). Names are
// topology node names; bytes is a size ("64MiB", or a plain integer count of bytes); start is a
// time with unit ("0" alone is allowed). Throws InputError naming the file, line and value.
std::vector<TrafficFlow> read_flows_csv(const std::filesystem::path& path,
                                        const topology::Topology& topology);
std::vector<TrafficFlow> parse_flows_csv(std::string_view text, const std::string& origin,
                                         const topology::Topology& topology);

// Patterns over the accelerators `ranks` (topology order), `bytes` per flow, all starting at 0:
//   permutation: each rank sends to another, a random derangement from `seed`;
//   alltoall: every ordered pair; incast: every rank to the first; ring: rank i to rank i+1.
// Throws InputError for an unknown pattern (with the closest name) or fewer than 2 ranks.
std::vector<TrafficFlow> traffic_pattern(std::string_view pattern,
                                         const topology::Topology& topology,
                                         std::span<const std::uint32_t> ranks, Bytes bytes,
                                         std::uint64_t seed);

struct FlowOutcome {
  Time start;
  Time finish;
};

struct LinkOutcome {
  topology::LinkIndex link;
  double bytes_carried = 0;
  double utilization = 0;  // bytes carried / (bandwidth x makespan)
  Time busy;
  std::uint32_t peak_flows = 0;
  BytesPerSecond bandwidth;  // as the flow network used it (calibrated)
};

struct TrafficResult {
  std::vector<FlowOutcome> flows;  // in input order
  std::vector<LinkOutcome> links;  // every link that carried bytes, in link order
  Time makespan;
};

// `idle_tolerance` as engine::FlowNetworkOptions (0: exact max-min).
// `progress`, when set, is called every kProgressFlows finished flows with (finished, flows) (a
// progress line).
inline constexpr std::size_t kProgressFlows = 4096;
TrafficResult run_traffic(
    const topology::Topology& topology, const Calibration& calibration,
    std::span<const TrafficFlow> flows, topology::EcmpMode ecmp, double idle_tolerance = 0.0,
    const std::function<void(std::size_t finished, std::size_t flows)>& progress = {});

}  // namespace stepsim::collectives
