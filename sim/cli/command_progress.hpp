// The progress lines of the long commands (sim/cli/progress_line.hpp shows them): what each says
// of the progress the application layer reports.
#pragma once

#include <chrono>

#include "sim/app/collective_sweep.hpp"
#include "sim/app/comparison.hpp"
#include "sim/cli/progress_line.hpp"
#include "sim/search/layout_search.hpp"

namespace stepsim::cli {

// `stepsim collective`: the size being run, its share of its plan's transfers done and the time
// left for it at the rate so far (the larger sizes after it cost more). `started_s` keeps when
// the size started (p.done == 0 says a size starts, and shows nothing).
void show_sweep_progress(ProgressLine& line, const app::SweepProgress& p, double& started_s);

// `stepsim compare`: the variant being searched (how many layouts simulated, running and left),
// or the variant being simulated with its share of operations done and the time left for it.
// `started_s` keeps when the variant's simulation started.
void show_compare_progress(ProgressLine& line, const app::CompareProgress& p, double& started_s);

// `stepsim search`: how many layouts are simulated, running and left at most, the best so far
// and the time left at the rate so far (an upper bound: the bound may stop the search before),
// on stderr when it is a terminal and info messages are shown, from Context::progress_after_s
// on; every report is also a debug message.
class SearchProgressLine {
 public:
  // `threads`: simulations at once over every process.
  SearchProgressLine(Context& ctx, std::chrono::steady_clock::time_point started, unsigned threads);
  void show(const search::SearchProgress& p);
  // Takes the line away when one was shown.
  void clear();
  // Wall time since `started`, seconds.
  double elapsed_s() const;

 private:
  Context& ctx_;
  std::chrono::steady_clock::time_point started_;
  unsigned threads_;
  bool enabled_;
  bool shown_ = false;
  bool first_ = true;
};

}  // namespace stepsim::cli
