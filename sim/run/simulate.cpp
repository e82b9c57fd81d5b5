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
  exec.network = scenario.network;
  exec.detail_ranks = representative_ranks(workload);
  exec.progress = options.progress;

  // The trace's counter tracks show the busiest links; recording the samples of every link of a
  // large network would take gigabytes, so a traced run goes twice: once to find the busiest links
  // (the same run, so the same figures), once with the trace and those links' samples only.
  std::vector<std::uint32_t> trace_links;
  if (options.trace) {
    executor::ExecutorOptions first = exec;
    if (options.progress)
      first.progress = [&options](std::uint64_t done, std::uint64_t total) {
        options.progress(done, 2 * total);
      };
    executor::Executor executor(workload, scenario.topology, first, nullptr);
    executor.run();
    std::vector<std::pair<double, std::uint32_t>> load;
    const auto& network = executor.network();
    for (std::uint32_t l = 0; l < scenario.topology.num_links(); ++l) {  // topology links only
      load.emplace_back(network.link_statistics(engine::LinkId{l}).bytes_carried /
                            network.bandwidth(engine::LinkId{l}).value(),
                        l);
    }
    std::stable_sort(load.begin(), load.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    for (std::size_t i = 0; i < std::min(options.trace_links, load.size()); ++i) {
      if (load[i].first > 0) trace_links.push_back(load[i].second);
    }
    if (options.progress)
      exec.progress = [&options](std::uint64_t done, std::uint64_t total) {
        options.progress(total + done, 2 * total);
      };
  }

  std::optional<TraceListener> trace;
  if (options.trace) {
    exec.record_link_samples = !trace_links.empty();
    exec.sampled_links = trace_links;
    std::vector<int> ranks = parse_trace_ranks(options.trace_ranks, workload);
    if (!ranks.empty() && options.trace_ranks == "auto" && options.note)
      options.note(fmt::format(
          "the trace shows {} of the {} ranks (whole data-parallel replicas from replica 0); "
          "--trace-ranks all shows every rank",
          ranks.size(), workload.world_size()));
    trace.emplace(*options.trace, workload, scenario.topology, std::move(ranks),
                  options.output_guard);
  }
  executor::Executor executor(workload, scenario.topology, exec, trace ? &*trace : nullptr);
  const executor::ExecutionResult result = executor.run();
  StepReport report = make_step_report(scenario, workload, executor, result);
  if (trace) trace->finish(executor, trace_links);
  return report;
}

}  // namespace stepsim
