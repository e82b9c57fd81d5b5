// `run_traffic`: point-to-point flows with contention on the flow network (a pattern over ranks,
// or a CSV of flows), their completion times and the links' utilization. The use behind `stepsim
// traffic`.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sim/app/network_settings.hpp"
#include "sim/collectives/runner/traffic.hpp"
#include "topology/topology.hpp"

namespace stepsim::app {

// The traffic to run: `pattern` over `ranks`, or the flows of `flows_file`, one of the two.
struct TrafficRequest {
  std::string topology;         // preset spec or YAML file
  std::string pattern;          // permutation, alltoall, incast or ring
  std::string flows_file;       // CSV with columns src,dst,bytes,start (topology node names)
  std::string ranks = "all";    // for the pattern: N, list, ranges, all
  std::string bytes = "64MiB";  // per flow of the pattern
  std::uint64_t seed = 1;       // of the random permutation
  // The scenario's network keys it takes (calibration, ecmp, idle_tolerance; docs/collectives.md):
  // their defaults unless set.
  NetworkSettings network;
  std::string max_memory;  // see memory_limit(); empty: the machine's
  // (flows finished, flows) now and then, when set.
  std::function<void(std::size_t, std::size_t)> progress;
};

struct TrafficRun {
  topology::Topology topology;
  std::string links;  // calibrated or line-rate
  std::vector<collectives::TrafficFlow> flows;
  collectives::TrafficResult result;  // flows in the order of `flows`
};

// Runs the traffic.
//   THROWS: InputError for a bad value (naming its flag or key), neither or both of pattern and
//   flows,
//           an all-to-all that needs more memory than allowed, or flows too large for the clock.
TrafficRun run_traffic(const TrafficRequest& request);

}  // namespace stepsim::app
