// The simulations of a search, handed out in the order of their lower bounds to whoever asks (the
// threads of this process, or other processes through a Distribution) while a bound is below the
// best step time finished so far. Thread-safe.
//
// Why this keeps the ranked output of the sequential rule (candidate i is simulated when its
// bound is below the best step time of the candidates before it): candidates are handed out in
// order, so every finished result belongs to a candidate before the next one, and the best so far
// is never better than the best of the candidates before it. Every candidate the sequential rule
// simulates is therefore handed out, whoever finishes first; those past the rule's stop are
// speculative, and search_layouts drops them.
#pragma once

#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

#include "sim/run/step_report.hpp"
#include "sim/search/layout_search.hpp"

namespace stepsim::search {

class CandidateQueue {
 public:
  // `bounds` in the order the candidates are handed out (non-decreasing when `prune_by_bound`).
  // `progress` (may be empty) is called, one call at a time, when a simulation starts or ends.
  CandidateQueue(std::vector<Time> bounds, bool prune_by_bound,
                 std::function<void(const SearchProgress&)> progress);

  // The next candidate to simulate, or nothing: every candidate was handed out, or the next one's
  // bound is no less than the best step time finished so far (and so are all after it).
  std::optional<std::size_t> take();
  // The simulation of candidate `i` (handed out by take()) ended with `report`, or with `error`.
  void finish(std::size_t i, std::optional<StepReport> report, std::exception_ptr error);

  std::size_t size() const { return reports_.size(); }
  // After every taken candidate finished: candidate i's report (empty when not simulated or when it
  // failed) and its error.
  std::vector<std::optional<StepReport>>& reports() { return reports_; }
  const std::vector<std::exception_ptr>& errors() const { return errors_; }

 private:
  void report_progress();  // under the lock

  std::vector<Time> bounds_;
  bool prune_;
  std::function<void(const SearchProgress&)> progress_callback_;
  std::mutex mutex_;
  std::size_t next_ = 0;
  SearchProgress progress_;
  std::vector<std::optional<StepReport>> reports_;
  std::vector<std::exception_ptr> errors_;
};

}  // namespace stepsim::search
