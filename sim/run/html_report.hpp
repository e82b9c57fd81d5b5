// The `--html` reports of `stepsim run` and `stepsim compare`: one self-contained HTML page of
// SVG charts (sim/output/html_charts.hpp) drawn from the StepReport and the StepView the run
// computed. The same report gives the same bytes.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "sim/run/step_report.hpp"
#include "sim/run/step_view.hpp"

namespace stepsim {

// The report of one step: summary, timeline of the shown ranks, time per pipeline stage, busiest
// links over time and per link class, bytes per parallel dimension, memory per stage, scenario.
void write_step_html(std::ostream& out, const StepReport& report, const StepView& view);

// Several steps side by side: step time, where the time goes on rank 0, bytes per dimension,
// busiest link and memory per variant. `labels` name the variants (as the compare table does).
void write_compare_html(std::ostream& out, const std::vector<std::string>& labels,
                        const std::vector<StepReport>& reports);

struct ServeReport;
struct ServeViews;

// `stepsim serve --html`: the serving figures (TTFT, TPOT, tokens/s per accelerator, the KV
// transfer, the TPOT search), then for the prefill pass and the decode step each its timeline,
// where rank 0's time goes and its busiest links; memory per accelerator of each pool against
// the capacity; the scenario. The same report gives the same bytes.
void write_serve_html(std::ostream& out, const ServeReport& report, const ServeViews& views);

// Serving scenarios side by side (`stepsim compare` of serving scenarios): TTFT, TPOT and tokens/s
// per accelerator of each pool, and memory per accelerator.
void write_serve_compare_html(std::ostream& out, const std::vector<std::string>& labels,
                              const std::vector<ServeReport>& reports);

// One size of a `stepsim collective` sweep, as its table prints it.
struct CollectivePoint {
  Bytes size;
  double time_us = 0;
  double algbw_GBps = 0;
  double busbw_GBps = 0;
  std::string algorithm;
};
// A published busbw to overlay (validation/cases.yaml), with what it is.
struct PublishedBusbw {
  Bytes size;
  double busbw_GBps = 0;
  std::string note;  // figure and reference
};

// `stepsim collective --html`: busbw and algbw against the size (log axis), the published points
// where there are some, the setup and the table.
void write_collective_html(std::ostream& out, const std::string& title,
                           const std::vector<std::vector<std::string>>& setup,
                           const std::vector<CollectivePoint>& points,
                           const std::vector<PublishedBusbw>& published);

}  // namespace stepsim
