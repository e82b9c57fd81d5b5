#include "sim/run/simulate.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "sim/executor/executor.hpp"
#include "sim/run/trace_listener.hpp"
#include "sim/scenario/scenario.hpp"
#include "workloads/workload.hpp"

namespace stepsim {

StepReport simulate_step(const Scenario& scenario, const SimulateOptions& options) {
  const workloads::Workload workload(scenario.workload);
  executor::ExecutorOptions exec;
  exec.algorithm = scenario.network.algorithm;
  exec.calibration = scenario.network.calibration;
  exec.plan = scenario.network.plan;
  exec.runner.ecmp = scenario.network.ecmp;
  exec.detail_ranks = representative_ranks(workload);
  exec.progress = options.progress;

  std::optional<TraceListener> trace;
  if (options.trace) {
    exec.record_link_samples = true;
    std::vector<int> ranks = parse_trace_ranks(options.trace_ranks, workload);
    if (!ranks.empty() && options.trace_ranks == "auto" && options.note)
      options.note(fmt::format(
          "the trace shows {} of the {} ranks (whole data-parallel replicas from replica 0); "
          "--trace-ranks all shows every rank",
          ranks.size(), workload.world_size()));
    trace.emplace(*options.trace, workload, scenario.topology, std::move(ranks));
  }
  executor::Executor executor(workload, scenario.topology, exec, trace ? &*trace : nullptr);
  const executor::ExecutionResult result = executor.run();
  StepReport report = make_step_report(scenario, workload, executor, result);
  if (trace) {
    // Counter tracks for the busiest links, chosen by utilization over the step.
    std::vector<std::pair<double, std::uint32_t>> load;
    const auto& network = executor.network();
    for (std::uint32_t l = 0; l < scenario.topology.num_links(); ++l) {  // topology links only
      load.emplace_back(network.link_statistics(engine::LinkId{l}).bytes_carried /
                            network.bandwidth(engine::LinkId{l}).value(),
                        l);
    }
    std::stable_sort(load.begin(), load.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    std::vector<std::uint32_t> links;
    for (std::size_t i = 0; i < std::min(options.trace_links, load.size()); ++i) {
      if (load[i].first > 0) links.push_back(load[i].second);
    }
    trace->finish(executor, links);
  }
  return report;
}

}  // namespace stepsim
