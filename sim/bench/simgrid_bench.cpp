// The all-to-all of bench_engine's BM_AllToAll run by stepsim's flow network and by SimGrid's
// max-min network model (CM02 by default) in one process, on the same two-level fat-tree with the
// same flows, so that the ratio of their CPU times is measured in one run on one machine.
//
//   bench_simgrid ENDPOINTS [UNEVEN=1] [MODEL=CM02] [SIMGRID=1]
//
// ENDPOINTS hosts of a 32-leaf x 16-host fat-tree (512 hosts, 16 spines, 400 Gb/s links, path
// s -> d through spine d mod 16; latencies below) each send one flow to every other: sizes 1 MiB,
// or uniform in [1, 2] MiB with UNEVEN=1, drawn as BM_AllToAll draws them (std::mt19937_64 seeded
// 3, sources then destinations in increasing order), all started at time 0. MODEL is SimGrid's
// network/model (CM02: plain max-min, no bandwidth or latency factors; LV08: its default, with
// them); SIMGRID=0 runs stepsim alone. SimGrid is configured to match the fluid model: no
// cross-traffic (TCP acknowledgements), no TCP window bound. Prints one line per simulator (CPU
// seconds, simulated makespan) and the ratio, and for CM02 the largest difference of per-flow
// finish times between the two (a cross-check of both max-min solvers: SimGrid starts a flow's
// bytes after its path latency, stepsim counts the latency after the bytes, which comes to the same
// with equal path latencies).
//
// Built only when pkg-config finds SimGrid (Debian: libsimgrid-dev; scripts/setup.sh simgrid).
// Figures: docs/performance.md, "Beside SimGrid".
#include <time.h>
#include <simgrid/s4u.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "sim/engine/flow_network.hpp"
#include "sim/engine/simulator.hpp"

namespace {

namespace sg4 = simgrid::s4u;

constexpr int kLeaves = 32;
constexpr int kHostsPerLeaf = 16;
constexpr int kSpines = kHostsPerLeaf;
constexpr double kBandwidth = 50e9;  // 400 Gb/s in bytes/s
// Host links 1 us, switch-to-switch links 0: every path then has 2 us of latency. SimGrid's CM02
// shares a link in inverse proportion to each flow's path latency (its RTT weighting); with equal
// path latencies that is plain max-min, the model stepsim solves, so the two must agree flow by
// flow. (BM_AllToAll gives every link 1 us; latency does not change stepsim's rates or its cost.)
constexpr double kHostLatencyS = 1e-6;
constexpr double kMiB = 1024.0 * 1024.0;

double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// Link numbering shared by both simulators: host uplinks, host downlinks, leaf -> spine,
// spine -> leaf, in BM_AllToAll's FatTree order.
struct Links {
  static constexpr int hosts = kLeaves * kHostsPerLeaf;
  static constexpr int count = 2 * hosts + 2 * kLeaves * kSpines;
  static int up(int h) { return h; }
  static int down(int h) { return hosts + h; }
  static int leaf_up(int leaf, int spine) { return 2 * hosts + leaf * kSpines + spine; }
  static int spine_down(int spine, int leaf) {
    return 2 * hosts + kLeaves * kSpines + spine * kLeaves + leaf;
  }
  static double latency_s(int link) { return link < 2 * hosts ? kHostLatencyS : 0.0; }
  // The path of s -> d; returns its length.
  static std::size_t path(int s, int d, std::array<int, 4>& out) {
    const int ls = s / kHostsPerLeaf;
    const int ld = d / kHostsPerLeaf;
    if (ls == ld) {
      out = {up(s), down(d), -1, -1};
      return 2;
    }
    const int spine = d % kSpines;
    out = {up(s), leaf_up(ls, spine), spine_down(spine, ld), down(d)};
    return 4;
  }
};

struct Flow {
  int source;
  int destination;
  std::int64_t bytes;
};

std::vector<Flow> all_to_all(int endpoints, bool uneven) {
  std::vector<Flow> flows;
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> factor(1.0, 2.0);
  for (int s = 0; s < endpoints; ++s) {
    for (int d = 0; d < endpoints; ++d) {
      if (s == d) continue;
      const double bytes = uneven ? kMiB * factor(rng) : kMiB;
      flows.push_back({s, d, static_cast<std::int64_t>(bytes)});
    }
  }
  return flows;
}

struct Result {
  double cpu_s = 0.0;
  double makespan_s = 0.0;
  std::vector<double> finish_s;  // per flow
};

Result run_stepsim(const std::vector<Flow>& flows) {
  using namespace stepsim;
  using namespace stepsim::engine;
  Result result;
  result.finish_s.assign(flows.size(), -1.0);
  const double start = cpu_seconds();
  Simulator sim;
  FlowNetwork net(sim);
  for (int l = 0; l < Links::count; ++l)
    net.add_link(BytesPerSecond(kBandwidth), Time::from_seconds(Links::latency_s(l)));
  std::array<int, 4> path{};
  std::array<LinkId, 4> ids{};
  for (std::size_t i = 0; i < flows.size(); ++i) {
    const std::size_t len = Links::path(flows[i].source, flows[i].destination, path);
    for (std::size_t k = 0; k < len; ++k)
      ids[k] = LinkId{static_cast<std::uint32_t>(path[k])};
    net.start_flow(
        flows[i].source, flows[i].destination, Bytes(flows[i].bytes),
        std::span<const LinkId>(ids.data(), len),
        [&result, i](const FlowCompletion& done) { result.finish_s[i] = done.finish.seconds(); });
  }
  sim.run();
  result.cpu_s = cpu_seconds() - start;
  result.makespan_s = sim.now().seconds();
  return result;
}

Result run_simgrid(const std::vector<Flow>& flows, const std::string& model, int argc,
                   char** argv) {
  Result result;
  result.finish_s.assign(flows.size(), -1.0);
  const double start = cpu_seconds();
  sg4::Engine engine(&argc, argv);
  sg4::Engine::set_config("network/model:" + model);
  sg4::Engine::set_config("network/crosstraffic:0");
  sg4::Engine::set_config("network/TCP-gamma:1e15");  // a window bound far above any rate here
  auto* zone = sg4::create_full_zone("fat-tree");
  std::vector<sg4::Host*> hosts;
  for (int h = 0; h < Links::hosts; ++h)
    hosts.push_back(zone->create_host("host" + std::to_string(h), 1e9));
  std::vector<sg4::Link*> links;
  for (int l = 0; l < Links::count; ++l)
    links.push_back(zone->create_link("link" + std::to_string(l), kBandwidth)
                        ->set_latency(Links::latency_s(l))
                        ->seal());
  // Routes between the hosts that send (one per ordered pair; not symmetrical).
  int endpoints = 0;
  for (const Flow& f : flows)
    endpoints = std::max({endpoints, f.source + 1, f.destination + 1});
  std::array<int, 4> path{};
  for (int s = 0; s < endpoints; ++s) {
    for (int d = 0; d < endpoints; ++d) {
      if (s == d) continue;
      const std::size_t len = Links::path(s, d, path);
      std::vector<sg4::LinkInRoute> route;
      for (std::size_t k = 0; k < len; ++k)
        route.emplace_back(links[static_cast<std::size_t>(path[k])]);
      zone->add_route(hosts[static_cast<std::size_t>(s)]->get_netpoint(),
                      hosts[static_cast<std::size_t>(d)]->get_netpoint(), nullptr, nullptr, route,
                      false);
    }
  }
  zone->seal();
  std::vector<sg4::CommPtr> comms;
  comms.reserve(flows.size());
  sg4::Actor::create("driver", hosts[0], [&] {
    for (const Flow& f : flows) {
      sg4::CommPtr c = sg4::Comm::sendto_init(hosts[static_cast<std::size_t>(f.source)],
                                              hosts[static_cast<std::size_t>(f.destination)]);
      c->set_payload_size(static_cast<std::uint64_t>(f.bytes));
      c->start();
      comms.push_back(c);
    }
    sg4::Comm::wait_all(comms);
  });
  engine.run();
  result.cpu_s = cpu_seconds() - start;
  result.makespan_s = sg4::Engine::get_clock();
  for (std::size_t i = 0; i < comms.size(); ++i)
    result.finish_s[i] = comms[i]->get_finish_time();
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s ENDPOINTS [UNEVEN=1] [MODEL=CM02] [SIMGRID=1]\n", argv[0]);
    return 2;
  }
  const int endpoints = std::atoi(argv[1]);
  const bool uneven = argc < 3 || std::atoi(argv[2]) != 0;
  const std::string model = argc >= 4 ? argv[3] : "CM02";
  const bool with_simgrid = argc < 5 || std::atoi(argv[4]) != 0;
  if (endpoints < 2 || endpoints > Links::hosts) {
    std::fprintf(stderr, "ENDPOINTS must be in [2, %d]\n", Links::hosts);
    return 2;
  }
  const std::vector<Flow> flows = all_to_all(endpoints, uneven);
  std::printf("all-to-all among %d endpoints, %zu flows, sizes %s\n", endpoints, flows.size(),
              uneven ? "uniform in [1, 2] MiB" : "1 MiB");
  const Result ours = run_stepsim(flows);
  std::printf("stepsim (exact max-min): %8.3f s CPU, makespan %.6f ms\n", ours.cpu_s,
              ours.makespan_s * 1e3);
  if (!with_simgrid) return 0;
  int sg_argc = 1;
  const Result theirs = run_simgrid(flows, model, sg_argc, argv);
  std::printf("SimGrid %s:            %8.3f s CPU, makespan %.6f ms\n", model.c_str(), theirs.cpu_s,
              theirs.makespan_s * 1e3);
  std::printf("ratio SimGrid / stepsim: %.1f\n", theirs.cpu_s / ours.cpu_s);
  double worst = 0.0;
  for (std::size_t i = 0; i < flows.size(); ++i)
    worst = std::max(worst, std::fabs(theirs.finish_s[i] - ours.finish_s[i]));
  std::printf("largest per-flow finish difference: %.3f us \n", worst * 1e6);
  return 0;
}
