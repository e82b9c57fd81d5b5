#include "sim/run/simulate.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "sim/executor/executor.hpp"
#include "sim/run/trace_listener.hpp"
#include "sim/scenario/scenario.hpp"
#include "workloads/workload.hpp"

namespace stepsim {

std::vector<std::uint32_t> busiest_links(const executor::Executor& executor,
                                         const topology::Topology& topology, std::size_t count) {
  std::vector<std::pair<double, std::uint32_t>> load;
  const auto& network = executor.network();
  for (std::uint32_t l = 0; l < topology.num_links(); ++l) {  // topology links only
    load.emplace_back(network.link_statistics(engine::LinkId{l}).bytes_carried /
                          network.bandwidth(engine::LinkId{l}).value(),
                      l);
  }
  std::stable_sort(load.begin(), load.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::uint32_t> links;
  for (std::size_t i = 0; i < std::min(count, load.size()); ++i) {
    if (load[i].first > 0) links.push_back(load[i].second);
  }
  return links;
}

void sample_links(executor::ExecutorOptions& options, const std::vector<std::uint32_t>& trace_links,
                  const std::vector<std::uint32_t>& view_links) {
  std::vector<std::uint32_t> sampled = trace_links;
  sampled.insert(sampled.end(), view_links.begin(), view_links.end());
  std::sort(sampled.begin(), sampled.end());
  sampled.erase(std::unique(sampled.begin(), sampled.end()), sampled.end());
  options.record_link_samples = !sampled.empty();
  options.sampled_links = sampled;
}

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
  std::vector<std::uint32_t> view_links;
  const std::size_t view_link_count = options.view != nullptr ? options.view_links : 0;
  if (options.trace || view_link_count > 0) {
    executor::ExecutorOptions first = exec;
    if (options.progress)
      first.progress = [&options](std::uint64_t done, std::uint64_t total) {
        options.progress(done, 2 * total);
      };
    executor::Executor executor(workload, scenario.topology, first, nullptr);
    executor.run();
    trace_links =
        busiest_links(executor, scenario.topology, options.trace ? options.trace_links : 0);
    view_links = busiest_links(executor, scenario.topology, view_link_count);
    if (options.progress)
      exec.progress = [&options](std::uint64_t done, std::uint64_t total) {
        options.progress(total + done, 2 * total);
      };
  }

  sample_links(exec, trace_links, view_links);
  std::optional<TraceListener> trace;
  if (options.trace) {
    std::vector<int> ranks = parse_trace_ranks(options.trace_ranks, workload);
    if (!ranks.empty() && options.trace_ranks == "auto" && options.note)
      options.note(fmt::format(
          "the trace shows {} of the {} ranks (whole data-parallel replicas from replica 0); "
          "--trace-ranks all shows every rank",
          ranks.size(), workload.world_size()));
    trace.emplace(*options.trace, workload, scenario.topology, std::move(ranks),
                  options.output_guard);
  }
  // The view needs every stage's breakdown: the representative ranks' come first, in the order
  // the report lists them, then the other stages'.
  std::optional<StepViewRecorder> recorder;
  std::vector<int> stage_ranks;
  const std::size_t representative = exec.detail_ranks.size();
  if (options.view != nullptr) {
    stage_ranks = stage_first_ranks(workload);
    for (int r : stage_ranks) {
      if (std::find(exec.detail_ranks.begin(), exec.detail_ranks.end(), r) ==
          exec.detail_ranks.end())
        exec.detail_ranks.push_back(r);
    }
    recorder.emplace(workload, scenario.topology, parse_view_ranks(options.view_ranks, workload),
                     trace ? &*trace : nullptr);
  }
  executor::OpListener* listener = nullptr;
  if (recorder) {
    listener = &*recorder;
  } else if (trace) {
    listener = &*trace;
  }
  executor::Executor executor(workload, scenario.topology, exec, listener);
  executor::ExecutionResult result = executor.run();
  if (options.view != nullptr) {
    StepView& view = *options.view;
    view = StepView{};
    view.step_time = result.step_time;
    view.ranks = recorder->take();
    for (std::size_t s = 0; s < stage_ranks.size(); ++s) {
      const auto at = std::find(exec.detail_ranks.begin(), exec.detail_ranks.end(), stage_ranks[s]);
      view.stages.push_back(
          {static_cast<int>(s),
           result.breakdowns[static_cast<std::size_t>(at - exec.detail_ranks.begin())]});
    }
    result.breakdowns.resize(representative);
    add_link_views(view, scenario.topology, executor, view_links, result.step_time,
                   options.view_bins);
  }
  StepReport report = make_step_report(scenario, workload, executor, result);
  if (trace) trace->finish(executor, trace_links);
  return report;
}

}  // namespace stepsim
