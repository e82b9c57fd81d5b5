#include "sim/app/traffic_run.hpp"

#include <fmt/format.h>
#include <filesystem>

#include "sim/app/memory_guard.hpp"
#include "sim/collectives/runner/placement.hpp"
#include "sim/common/input_error.hpp"
#include "topology/load_topology.hpp"

namespace stepsim::app {
namespace {

using namespace stepsim::collectives;

// Memory per flow of `--pattern alltoall` (its traffic entry, route, flow state and outcome),
// measured with GNU time's peak resident size less the topology's: `stepsim traffic -t
// dgx-h100-superpod:nodes=N -p alltoall -b 1MiB` took 22.3 MB at 128 ranks (16,256 flows),
// 68.7 MB at 256 (65,280) and 256.2 MB at 512 (261,632), 880-960 bytes a flow; rounded up
// (docs/reliability.md).
constexpr double kBytesPerTrafficFlow = 1000;

std::vector<TrafficFlow> make_flows(const TrafficRequest& r, const topology::Topology& topo) {
  if (!r.flows_file.empty()) return read_flows_csv(r.flows_file, topo);
  const auto ranks = parse_ranks(r.ranks, static_cast<std::uint32_t>(topo.accelerators().size()));
  // An all-to-all pattern has n(n-1) flows, the one pattern that grows with the square of the
  // ranks: refused before a single flow is made when they need more memory than allowed.
  if (r.pattern == "alltoall")
    guard_all_to_all("--pattern alltoall", "flows", ranks.size(), kBytesPerTrafficFlow,
                     r.max_memory);
  Bytes bytes;
  try {
    bytes = parse_bytes(r.bytes);
  } catch (const InputError& e) {
    throw InputError(fmt::format("--bytes '{}': {}", r.bytes, e.what()));
  }
  return traffic_pattern(r.pattern, topo, ranks, bytes, r.seed);
}

}  // namespace

TrafficRun run_traffic(const TrafficRequest& request) {
  if (request.pattern.empty() == request.flows_file.empty())
    throw InputError("give either --pattern NAME or --flows FILE.csv");
  const collectives::NetworkOptions network = request.network.read();
  TrafficRun run;
  run.topology = topology::load_topology_spec(request.topology, std::filesystem::current_path());
  run.links = network.calibrated ? "calibrated" : "line-rate";
  run.flows = make_flows(request, run.topology);
  try {
    run.result =
        collectives::run_traffic(run.topology, network.calibration, run.flows, network.runner.ecmp,
                                 network.idle_tolerance, request.progress);
  } catch (const InputError& e) {  // flows too large for the clock: say whose
    throw InputError(fmt::format(
        "{}: {}", request.flows_file.empty() ? "--pattern " + request.pattern : request.flows_file,
        e.what()));
  }
  return run;
}

}  // namespace stepsim::app
