// Topology benchmarks: building and routing a 100,000-GPU cluster (12,500 DGX H100 nodes on a
// 3-tier rail-optimized fat-tree of radix-128 switches), and breadth-first routing on a torus
// for comparison. Figures are in docs/performance.md, section "Topology".
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <cstdint>

#include "topology/load_topology.hpp"
#include "topology/router.hpp"

namespace {

using namespace stepsim::topology;

constexpr const char* kCluster = "dgx-h100-superpod:nodes=12500,radix=128";

double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

const Topology& cluster() {
  static const Topology t = load_topology_spec(kCluster, ".");
  return t;
}

// Destination of the i-th flow: a fixed odd stride through the ranks, so pairs are spread over
// nodes, scalable units and pods (no random generator needed, same pairs every run).
std::size_t partner(std::size_t i, std::size_t n) {
  return (i * 7919 + n / 2 + 1) % n;
}

void BM_BuildCluster100k(benchmark::State& state) {
  for (auto _ : state) {
    Topology t = load_topology_spec(kCluster, ".");
    benchmark::DoNotOptimize(t.num_links());
    state.counters["nodes"] = static_cast<double>(t.num_nodes());
    state.counters["links"] = static_cast<double>(t.num_links());
    state.counters["gpus"] = static_cast<double>(t.accelerators().size());
  }
  state.counters["peak_rss_MiB"] = peak_rss_mib();
}
BENCHMARK(BM_BuildCluster100k)->Unit(benchmark::kMillisecond)->Iterations(1);

void BM_RouteHash100k(benchmark::State& state) {
  const Topology& t = cluster();
  Router router(t);
  const auto& acc = t.accelerators();
  std::size_t i = 0;
  std::size_t links = 0;
  for (auto _ : state) {
    const Path p = router.route(acc[i % acc.size()], acc[partner(i, acc.size())], i);
    links += p.size();
    ++i;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(i));
  state.counters["links_per_path"] = static_cast<double>(links) / static_cast<double>(i);
  state.counters["searches"] = static_cast<double>(router.searches());
  state.counters["peak_rss_MiB"] = peak_rss_mib();
}
BENCHMARK(BM_RouteHash100k)->Unit(benchmark::kMicrosecond);

void BM_RouteSpread100k(benchmark::State& state) {
  const Topology& t = cluster();
  Router router(t, RouterOptions{static_cast<std::size_t>(state.range(0)), 64ull << 20});
  const auto& acc = t.accelerators();
  std::size_t i = 0;
  std::size_t paths = 0;
  for (auto _ : state) {
    const Routes r = router.spread(acc[i % acc.size()], acc[partner(i, acc.size())]);
    paths += r.paths.size();
    ++i;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(i));
  state.counters["paths_per_flow"] = static_cast<double>(paths) / static_cast<double>(i);
}
BENCHMARK(BM_RouteSpread100k)->Arg(64)->Unit(benchmark::kMicrosecond);

// Breadth-first routing (no labels): a 32x32x32 torus, 32,768 accelerators; every new destination
// costs one search, later flows to it reuse the cached table.
void BM_RouteTorusBfs(benchmark::State& state) {
  static const Topology t = load_topology_spec("torus:dims=[32,32,32]", ".");
  Router router(t);
  const auto& acc = t.accelerators();
  std::size_t i = 0;
  for (auto _ : state) {
    const Path p = router.route(acc[i % acc.size()], acc[partner(i, acc.size())], i);
    benchmark::DoNotOptimize(p.size());
    ++i;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(i));
  state.counters["searches"] = static_cast<double>(router.searches());
}
BENCHMARK(BM_RouteTorusBfs)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
