// Engine benchmarks: raw event throughput, an all-to-all on a two-level fat-tree, and flows
// arriving over time. The fat-tree is built here directly from links (not with the topology
// library), so the engine is measured alone. Figures: docs/performance.md.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "sim/bench/level_rates.hpp"
#include "sim/engine/flow_network.hpp"
#include "sim/engine/simulator.hpp"

namespace stepsim::engine {
namespace {

using bench::LevelRates;

double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

// ---------------------------------------------------------------------------------------------
// Event throughput: a "hold" model. `pending` events wait in the queue; each one, when it runs,
// schedules the next at a pseudo-random later time, so every event is one schedule and one pop.

void BM_EventHold(benchmark::State& state) {
  const auto pending = static_cast<std::size_t>(state.range(0));
  constexpr std::uint64_t kEvents = 4'000'000;
  std::array<std::int64_t, 1024> delays{};
  std::mt19937_64 rng(1);
  for (auto& d : delays)
    d = std::uniform_int_distribution<std::int64_t>(1, 1'000'000)(rng);
  for (auto _ : state) {
    Simulator sim;
    std::uint64_t scheduled = 0;
    struct Hold {
      Simulator* sim;
      std::uint64_t* scheduled;
      const std::array<std::int64_t, 1024>* delays;
      void operator()() const {
        if (*scheduled < kEvents) {
          sim->schedule_after(Time::ps((*delays)[*scheduled & 1023]), *this);
          ++*scheduled;
        }
      }
    };
    for (std::size_t i = 0; i < pending; ++i) {
      sim.schedule_at(Time::ps(delays[i & 1023]), Hold{&sim, &scheduled, &delays});
      ++scheduled;
    }
    sim.run();
    benchmark::DoNotOptimize(sim.now());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(kEvents) * state.iterations());
}
BENCHMARK(BM_EventHold)
    ->Arg(16)
    ->Arg(1024)
    ->Arg(65536)
    ->Arg(100000)
    ->Arg(1 << 20)
    ->Unit(benchmark::kMillisecond);

// Schedule N events at random times, then pop them all.
void BM_EventScheduleThenRun(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  std::vector<std::int64_t> times(n);
  std::mt19937_64 rng(2);
  for (auto& t : times)
    t = std::uniform_int_distribution<std::int64_t>(0, 1'000'000'000)(rng);
  std::uint64_t sum = 0;
  for (auto _ : state) {
    Simulator sim;
    for (const std::int64_t t : times)
      sim.schedule_at(Time::ps(t), [&sum] { ++sum; });
    sim.run();
  }
  benchmark::DoNotOptimize(sum);
  state.SetItemsProcessed(static_cast<std::int64_t>(n) * state.iterations());
}
BENCHMARK(BM_EventScheduleThenRun)->Arg(1 << 10)->Arg(1 << 20)->Unit(benchmark::kMillisecond);

// ---------------------------------------------------------------------------------------------
// A non-blocking two-level fat-tree: `leaves` leaf switches of `hosts_per_leaf` hosts each, and as
// many spines as hosts per leaf; every cable is two directed links of `bandwidth`. The path from
// host s to host d goes up to its leaf and, between leaves, through spine d mod spines.
struct FatTree {
  FatTree(FlowNetwork& net, int leaves_, int hosts_per_leaf_, BytesPerSecond bandwidth,
          Time latency)
      : leaves(leaves_), hosts_per_leaf(hosts_per_leaf_), spines(hosts_per_leaf_) {
    const int hosts = leaves * hosts_per_leaf;
    for (int h = 0; h < hosts; ++h)
      up.push_back(net.add_link(bandwidth, latency));
    for (int h = 0; h < hosts; ++h)
      down.push_back(net.add_link(bandwidth, latency));
    for (int l = 0; l < leaves; ++l) {
      for (int s = 0; s < spines; ++s)
        leaf_up.push_back(net.add_link(bandwidth, latency));
    }
    for (int s = 0; s < spines; ++s) {
      for (int l = 0; l < leaves; ++l)
        spine_down.push_back(net.add_link(bandwidth, latency));
    }
  }
  int hosts() const { return leaves * hosts_per_leaf; }
  // Writes the path into `out` and returns its length.
  std::size_t path(int s, int d, std::array<LinkId, 4>& out) const {
    const int ls = s / hosts_per_leaf;
    const int ld = d / hosts_per_leaf;
    if (ls == ld) {
      out = {up[s], down[d], LinkId{}, LinkId{}};
      return 2;
    }
    const int spine = d % spines;
    out = {up[s], leaf_up[ls * spines + spine], spine_down[spine * leaves + ld], down[d]};
    return 4;
  }

  int leaves;
  int hosts_per_leaf;
  int spines;
  std::vector<LinkId> up, down, leaf_up, spine_down;
};

constexpr double kMiB = 1024.0 * 1024.0;

// All-to-all among the first `endpoints` hosts of a 32-leaf x 16-host fat-tree (512 hosts, 16
// spines, 400 Gb/s links of 1 us): endpoints * (endpoints - 1) flows of 1 MiB (or uniform in
// [1, 2] MiB when `uneven`), all started at time 0, on a network with `idle_tolerance`.
struct AllToAllRun {
  std::vector<double> finish_s;  // per flow, in start order
  double simulated_s = 0;
  std::uint64_t solves = 0;
  std::uint64_t rate_updates = 0;
  std::uint64_t classes_solved = 0;
  std::uint64_t deferred = 0;
  std::uint64_t boundary_expansions = 0;
  std::uint64_t boundary_estimates = 0;
  std::uint64_t boundary_refused = 0;
};

AllToAllRun run_all_to_all(int endpoints, bool uneven, double idle_tolerance,
                           SolveStrategy strategy = SolveStrategy::kIncremental) {
  AllToAllRun run;
  Simulator sim;
  FlowNetwork net(sim, FlowNetworkOptions{.solve = strategy, .idle_tolerance = idle_tolerance});
  const FatTree tree(net, 32, 16, BytesPerSecond::gigabits(400), Time::us(1));
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> factor(1.0, 2.0);
  std::array<LinkId, 4> path{};
  for (int s = 0; s < endpoints; ++s) {
    for (int d = 0; d < endpoints; ++d) {
      if (s == d) continue;
      const std::size_t len = tree.path(s, d, path);
      const double bytes = uneven ? kMiB * factor(rng) : kMiB;
      const std::size_t index = run.finish_s.size();
      run.finish_s.push_back(-1.0);
      net.start_flow(s, d, Bytes(static_cast<std::int64_t>(bytes)),
                     std::span<const LinkId>(path.data(), len),
                     [&run, index](const FlowCompletion& done) {
                       run.finish_s[index] = done.finish.seconds();
                     });
    }
  }
  sim.run();
  run.simulated_s = sim.now().seconds();
  run.solves = net.solves();
  run.rate_updates = net.rate_updates();
  run.classes_solved = net.classes_solved();
  run.deferred = net.deferred_departures();
  run.boundary_expansions = net.boundary_expansions();
  run.boundary_estimates = net.boundary_estimates();
  run.boundary_refused = net.boundary_estimates_refused();
  return run;
}

// range(0) endpoints, range(1) 1 for uneven sizes, range(2) the idle tolerance in basis points
// (0: exact max-min; 500: 5%).
void all_to_all_benchmark(benchmark::State& state, SolveStrategy strategy) {
  const int endpoints = static_cast<int>(state.range(0));
  AllToAllRun run;
  for (auto _ : state) {
    run = run_all_to_all(endpoints, state.range(1) != 0, static_cast<double>(state.range(2)) * 1e-4,
                         strategy);
    if (std::count(run.finish_s.begin(), run.finish_s.end(), -1.0) != 0)
      state.SkipWithError("not every flow completed");
  }
  state.counters["deferred"] = static_cast<double>(run.deferred);
  state.counters["boundary_expansions"] = static_cast<double>(run.boundary_expansions);
  state.counters["boundary_estimates"] = static_cast<double>(run.boundary_estimates);
  state.counters["boundary_refused"] = static_cast<double>(run.boundary_refused);
  state.counters["rate_updates"] = static_cast<double>(run.rate_updates);
  state.counters["classes_solved"] = static_cast<double>(run.classes_solved);
  state.counters["flows"] = static_cast<double>(run.finish_s.size());
  state.counters["simulated_ms"] = run.simulated_s * 1e3;
  state.counters["solves"] = static_cast<double>(run.solves);
  state.counters["peak_rss_MiB"] = peak_rss_mib();
}

void BM_AllToAll(benchmark::State& state) {
  all_to_all_benchmark(state, SolveStrategy::kIncremental);
}
BENCHMARK(BM_AllToAll)
    ->ArgsProduct({{64, 128, 256, 512}, {0, 1}, {0, 100, 500, 1000}})
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kSecond);

// The same with every boundary link's outside load summed class by class (what the flow network
// did before bounding it; SolveStrategy::kSummedBoundary), to measure the difference in
// one binary.
void BM_AllToAllSummedBoundary(benchmark::State& state) {
  all_to_all_benchmark(state, SolveStrategy::kSummedBoundary);
}
BENCHMARK(BM_AllToAllSummedBoundary)
    ->ArgsProduct({{64, 128, 256, 512}, {0, 1}, {0}})
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kSecond);

// What the idle tolerance costs in accuracy: the uneven all-to-all among range(0) endpoints with
// the tolerance range(1) (basis points) against exact max-min. Counters: the makespan's error and
// the mean and worst error of the flows' completion times, relative to exact, in percent. The
// time measured is both runs.
void BM_AllToAllToleranceError(benchmark::State& state) {
  const int endpoints = static_cast<int>(state.range(0));
  const double tolerance = static_cast<double>(state.range(1)) * 1e-4;
  double makespan = 0, mean = 0, worst = 0, later = 0;
  for (auto _ : state) {
    const AllToAllRun exact = run_all_to_all(endpoints, true, 0.0);
    const AllToAllRun approx = run_all_to_all(endpoints, true, tolerance);
    makespan = approx.simulated_s / exact.simulated_s - 1.0;
    double sum = 0;
    worst = 0;
    std::size_t n_later = 0;
    for (std::size_t f = 0; f < exact.finish_s.size(); ++f) {
      const double e = approx.finish_s[f] / exact.finish_s[f] - 1.0;
      sum += std::abs(e);
      worst = std::max(worst, std::abs(e));
      if (e > 0) ++n_later;
    }
    mean = sum / static_cast<double>(exact.finish_s.size());
    later = static_cast<double>(n_later) / static_cast<double>(exact.finish_s.size());
  }
  state.counters["makespan_err_pct"] = makespan * 100;
  state.counters["mean_err_pct"] = mean * 100;
  state.counters["worst_err_pct"] = worst * 100;
  state.counters["later_pct"] = later * 100;  // flows finishing later than exact
}
BENCHMARK(BM_AllToAllToleranceError)
    ->ArgsProduct({{64, 128, 256}, {100, 500, 1000}})
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kSecond);

// The same all-to-all (range(0) endpoints, range(1) 1 for uneven sizes; same fat-tree, paths,
// sizes and flow order as run_all_to_all) with the rates held per bottleneck level (LevelRates,
// the issue 16 prototype, exact max-min): finish times per flow in start order.
struct LevelsRun {
  std::vector<std::int64_t> finish_ps;
  LevelRates::Counters counters;
};

LevelsRun run_all_to_all_levels(int endpoints, bool uneven) {
  // The fat-tree's links as FatTree numbers them (on a flow network that runs nothing), mirrored.
  Simulator sim;
  FlowNetwork links(sim);
  const FatTree tree(links, 32, 16, BytesPerSecond::gigabits(400), Time::us(1));
  LevelRates net;
  for (std::uint32_t l = 0; l < links.link_count(); ++l)
    net.add_link(links.bandwidth(LinkId{l}).value(), links.latency(LinkId{l}).picoseconds());
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> factor(1.0, 2.0);
  std::array<LinkId, 4> path{};
  std::array<std::uint32_t, 4> ids{};
  for (int s = 0; s < endpoints; ++s) {
    for (int d = 0; d < endpoints; ++d) {
      if (s == d) continue;
      const std::size_t len = tree.path(s, d, path);
      for (std::size_t i = 0; i < len; ++i)
        ids[i] = path[i].value();
      const double bytes = uneven ? kMiB * factor(rng) : kMiB;
      net.add_flow(std::span<const std::uint32_t>(ids.data(), len),
                   static_cast<double>(static_cast<std::int64_t>(bytes)));
    }
  }
  net.run();
  LevelsRun run;
  run.finish_ps.assign(net.finish_ps().begin(), net.finish_ps().end());
  run.counters = net.counters();
  return run;
}

void set_level_counters(benchmark::State& state, const LevelRates::Counters& c) {
  state.counters["instants"] = static_cast<double>(c.instants);
  state.counters["full_solves"] = static_cast<double>(c.full_solves);
  state.counters["level_updates"] = static_cast<double>(c.level_updates);
  state.counters["classes_solved"] = static_cast<double>(c.classes_solved);
  state.counters["class_moves"] = static_cast<double>(c.class_moves);
  state.counters["partial_solves"] = static_cast<double>(c.partial_solves);
  state.counters["classes_in_play"] = static_cast<double>(c.classes_in_play);
  state.counters["groups_in_play"] = static_cast<double>(c.groups_in_play);
  state.counters["link_scans"] = static_cast<double>(c.link_scans);
}

void BM_AllToAllLevels(benchmark::State& state) {
  LevelsRun run;
  for (auto _ : state) {
    run = run_all_to_all_levels(static_cast<int>(state.range(0)), state.range(1) != 0);
    if (std::count(run.finish_ps.begin(), run.finish_ps.end(), -1) != 0)
      state.SkipWithError("not every flow completed");
  }
  set_level_counters(state, run.counters);
  state.counters["flows"] = static_cast<double>(run.finish_ps.size());
  state.counters["simulated_ms"] =
      static_cast<double>(*std::max_element(run.finish_ps.begin(), run.finish_ps.end())) * 1e-9;
  state.counters["peak_rss_MiB"] = peak_rss_mib();
}
BENCHMARK(BM_AllToAllLevels)
    ->ArgsProduct({{64, 128, 256, 512}, {0, 1}})
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kSecond);

// Both: the flow network (exact) and the levels, flow by flow. Counters: the largest difference
// of a finish time in picoseconds and relative, and the flows whose finish differs.
void BM_AllToAllLevelsError(benchmark::State& state) {
  double worst_ps = 0, worst_rel = 0, differ = 0;
  for (auto _ : state) {
    const AllToAllRun exact = run_all_to_all(static_cast<int>(state.range(0)), true, 0.0);
    const LevelsRun levels = run_all_to_all_levels(static_cast<int>(state.range(0)), true);
    worst_ps = worst_rel = differ = 0;
    for (std::size_t f = 0; f < exact.finish_s.size(); ++f) {
      const double e = exact.finish_s[f] * 1e12;
      const double a = static_cast<double>(levels.finish_ps[f]);
      worst_ps = std::max(worst_ps, std::abs(a - e));
      worst_rel = std::max(worst_rel, std::abs(a - e) / e);
      if (std::abs(a - e) > 0.5) ++differ;
    }
    set_level_counters(state, levels.counters);
  }
  state.counters["worst_diff_ps"] = worst_ps;
  state.counters["worst_diff_rel"] = worst_rel;
  state.counters["flows_differing"] = differ;
}
BENCHMARK(BM_AllToAllLevelsError)
    ->Arg(64)
    ->Arg(128)
    ->Arg(256)
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kSecond);

// `range(0)` flows arrive one by one (Poisson) between random distinct hosts of a 32-leaf x
// 32-host fat-tree (1,024 hosts, 32 spines, 400 Gb/s links of 1 us), sizes uniform in
// [0.5, 1.5] MiB, at an offered load of 30% of every host's link. Arrivals are generated one
// event at a time, so memory follows the active flows.
void BM_Arrivals(benchmark::State& state) {
  const auto total = static_cast<std::uint64_t>(state.range(0));
  double simulated_s = 0;
  std::uint64_t solves = 0;
  std::size_t peak_active = 0;
  for (auto _ : state) {
    Simulator sim;
    FlowNetwork net(sim);
    const FatTree tree(net, 32, 32, BytesPerSecond::gigabits(400), Time::us(1));
    const int hosts = tree.hosts();
    const double per_host_rate = 0.3 * BytesPerSecond::gigabits(400).value() / kMiB;
    std::mt19937_64 rng(4);
    std::exponential_distribution<double> gap(per_host_rate * hosts);
    std::uniform_int_distribution<int> host(0, hosts - 1);
    std::uniform_real_distribution<double> size(0.5 * kMiB, 1.5 * kMiB);
    std::uint64_t started = 0;
    std::uint64_t done = 0;
    std::array<LinkId, 4> path{};
    struct Arrive {
      std::function<void()>* body;
      void operator()() const { (*body)(); }
    };
    std::function<void()> arrive = [&] {
      const int s = host(rng);
      int d = host(rng);
      while (d == s)
        d = host(rng);
      const std::size_t len = tree.path(s, d, path);
      net.start_flow(s, d, Bytes(static_cast<std::int64_t>(size(rng))),
                     std::span<const LinkId>(path.data(), len),
                     [&done](const FlowCompletion&) { ++done; });
      peak_active = std::max(peak_active, net.active_flows());
      if (++started < total) sim.schedule_after(Time::from_seconds(gap(rng)), Arrive{&arrive});
    };
    sim.schedule_at(Time::zero(), Arrive{&arrive});
    sim.run();
    if (done != total) state.SkipWithError("not every flow completed");
    simulated_s = sim.now().seconds();
    solves = net.solves();
  }
  state.counters["flows_per_s"] =
      benchmark::Counter(static_cast<double>(total) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
  state.counters["simulated_ms"] = simulated_s * 1e3;
  state.counters["solves"] = static_cast<double>(solves);
  state.counters["peak_active"] = static_cast<double>(peak_active);
  state.counters["peak_rss_MiB"] = peak_rss_mib();
}
BENCHMARK(BM_Arrivals)
    ->Arg(4096)
    ->Arg(16384)
    ->Arg(65536)
    ->Arg(262144)
    ->Arg(1 << 20)
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kSecond);

// Replicas (twin parts, sim/engine/twin_parts.hpp): range(0) groups of 8 hosts, each group under
// one leaf of the fat-tree above (two groups a leaf), each running the same uneven all-to-all
// among its 8 hosts (56 flows of [1, 2] MiB, the sizes drawn once and given to every group), all
// started at time 0; range(1) 1 with twin parts (the default), 0 with each component solved
// whole. The groups share no link, and every instant ends the same flow in every group.
void BM_ReplicatedAllToAll(benchmark::State& state) {
  const int groups = static_cast<int>(state.range(0));
  const bool twins = state.range(1) != 0;
  constexpr int kGroupHosts = 8;
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> factor(1.0, 2.0);
  std::vector<double> bytes;
  for (int f = 0; f < kGroupHosts * (kGroupHosts - 1); ++f)
    bytes.push_back(kMiB * factor(rng));
  double simulated_s = 0;
  std::uint64_t classes_solved = 0, twin_classes = 0, solves = 0;
  std::size_t unfinished = 0;
  for (auto _ : state) {
    Simulator sim;
    FlowNetwork net(sim, FlowNetworkOptions{.solve = twins ? SolveStrategy::kIncremental
                                                           : SolveStrategy::kWholeComponent});
    const FatTree tree(net, 32, 16, BytesPerSecond::gigabits(400), Time::us(1));
    std::vector<double> finish_s;
    std::array<LinkId, 4> path{};
    for (int g = 0; g < groups; ++g) {
      const int first = g * kGroupHosts;
      int f = 0;
      for (int s = 0; s < kGroupHosts; ++s) {
        for (int d = 0; d < kGroupHosts; ++d) {
          if (s == d) continue;
          const std::size_t len = tree.path(first + s, first + d, path);
          const std::size_t index = finish_s.size();
          finish_s.push_back(-1.0);
          net.start_flow(first + s, first + d, Bytes(static_cast<std::int64_t>(bytes[f++])),
                         std::span<const LinkId>(path.data(), len),
                         [&finish_s, index](const FlowCompletion& done) {
                           finish_s[index] = done.finish.seconds();
                         });
        }
      }
    }
    sim.run();
    unfinished = static_cast<std::size_t>(std::count(finish_s.begin(), finish_s.end(), -1.0));
    simulated_s = sim.now().seconds();
    classes_solved = net.classes_solved();
    twin_classes = net.twin_classes();
    solves = net.solves();
  }
  if (unfinished != 0) state.SkipWithError("not every flow completed");
  state.counters["flows"] = groups * kGroupHosts * (kGroupHosts - 1);
  state.counters["solves"] = static_cast<double>(solves);
  state.counters["classes_solved"] = static_cast<double>(classes_solved);
  state.counters["twin_classes"] = static_cast<double>(twin_classes);
  state.counters["simulated_ms"] = simulated_s * 1e3;
}
BENCHMARK(BM_ReplicatedAllToAll)
    ->ArgsProduct({{8, 64}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace stepsim::engine

BENCHMARK_MAIN();
