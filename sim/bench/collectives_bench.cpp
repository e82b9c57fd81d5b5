// Collectives at scale: one AllReduce of 1 GiB over 1,024, 8,192 and 65,536 ranks of a DGX H100
// SuperPOD (8 GPUs per node, rail-optimized 400G fat-tree), fluid ring and the two hierarchical
// forms (phase after phase, pipelined), on the calibrated flow network. Reports wall time per
// simulated collective (planning + simulation; the topology is built once, outside the timing),
// the plan's transfers, the simulated time and the process's peak resident memory. Figures:
// docs/performance.md, "Collectives".
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <memory>

#include "sim/collectives/algorithms/algorithm_registry.hpp"
#include "sim/collectives/runner/collective_session.hpp"
#include "sim/common/config.hpp"
#include "topology/load_topology.hpp"

namespace stepsim::collectives {
namespace {

double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // Linux: kilobytes
}

void BM_AllReduce(benchmark::State& state, const char* algo) {
  const auto ranks = static_cast<std::uint32_t>(state.range(0));
  const topology::Topology topo =
      topology::load_topology_spec("dgx-h100-superpod:nodes=" + std::to_string(ranks / 8), ".");
  std::vector<std::uint32_t> members(ranks);
  for (std::uint32_t r = 0; r < ranks; ++r)
    members[r] = r;
  const Placement placement = place_group(topo, members);
  const GroupShape shape = group_shape(topo, placement);
  const Calibration calibration = calibrated_presets();
  const auto algorithm = builtin_algorithms().create(algo);
  Operation op;
  op.kind = CollectiveKind::kAllReduce;
  op.size = Bytes(std::int64_t{1} << 30);
  double simulated = 0;
  std::size_t transfers = 0;
  for (auto _ : state) {
    CollectiveSession session(topo, calibration);
    auto plan =
        std::make_shared<const Plan>(algorithm->plan(op, shape, calibration.plan_options()));
    transfers = plan->size();
    simulated = session.run(plan, placement).seconds();
    benchmark::DoNotOptimize(simulated);
  }
  state.counters["transfers"] = static_cast<double>(transfers);
  state.counters["simulated_ms"] = simulated * 1e3;
  state.counters["busbw_GBps"] = op.size.as_double() / simulated * 2 * (ranks - 1) / ranks * 1e-9;
  state.counters["peak_rss_MiB"] = peak_rss_mib();
}

BENCHMARK_CAPTURE(BM_AllReduce, ring_fluid, "ring-fluid")
    ->Arg(1024)
    ->Arg(8192)
    ->Arg(65536)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_AllReduce, hierarchical, "hierarchical")
    ->Arg(1024)
    ->Arg(8192)
    ->Arg(65536)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_AllReduce, hierarchical_pipelined, "hierarchical-pipelined")
    ->Arg(1024)
    ->Arg(8192)
    ->Arg(65536)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

}  // namespace
}  // namespace stepsim::collectives

BENCHMARK_MAIN();
