// One simulated training step from a validated scenario: generate the workload, run it on the
// topology with the executor, and build the report (and the trace, when asked).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sim/output/atomic_output.hpp"
#include "sim/run/step_report.hpp"
#include "sim/run/step_view.hpp"

namespace stepsim {

struct Scenario;

struct SimulateOptions {
  std::optional<std::filesystem::path> trace;  // write a Chrome trace here
  std::string trace_ranks = "auto";            // which ranks the trace shows (parse_trace_ranks)
  std::size_t trace_links = 10;                // counter tracks for this many busiest links
  // Progress (operations done, total), now and then; see executor::ExecutorOptions::progress.
  std::function<void(std::uint64_t, std::uint64_t)> progress;
  // Knows the trace's temporary file while it is written (sim/output/atomic_output.hpp).
  output::OutputGuard* output_guard = nullptr;
  // Notes for the user (which ranks an automatic trace shows), when set.
  std::function<void(const std::string&)> note;
  // Fills this with what the HTML report shows (sim/run/step_view.hpp), when set: the spans of
  // `view_ranks` (parse_view_ranks), every stage's breakdown, and the `view_links` busiest links'
  // utilization in `view_bins` time bins. Links need their samples, so (as for a trace) the step
  // is simulated twice unless view_links is 0; the figures are the same.
  StepView* view = nullptr;
  std::string view_ranks = "auto";
  std::size_t view_links = 16;
  std::size_t view_bins = 150;
};

StepReport simulate_step(const Scenario& scenario, const SimulateOptions& options = {});

// The topology links of a finished run, busiest first (bytes carried over bandwidth), at most
// `count`, those that carried something only. The trace's counters and the HTML report's links.
std::vector<std::uint32_t> busiest_links(const executor::Executor& executor,
                                         const topology::Topology& topology, std::size_t count);

// Has `options` record the utilization samples of the `trace_links` and the `view_links` (topology
// link indices; the union, sorted), or none when both are empty.
void sample_links(executor::ExecutorOptions& options, const std::vector<std::uint32_t>& trace_links,
                  const std::vector<std::uint32_t>& view_links);

}  // namespace stepsim
