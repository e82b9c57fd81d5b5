#include "sim/search/candidate_queue.hpp"

#include <algorithm>
#include <utility>

namespace stepsim::search {

CandidateQueue::CandidateQueue(std::vector<Time> bounds, bool prune_by_bound,
                               std::function<void(const SearchProgress&)> progress)
    : bounds_(std::move(bounds)),
      prune_(prune_by_bound),
      progress_callback_(std::move(progress)),
      reports_(bounds_.size()),
      errors_(bounds_.size()) {}

std::optional<std::size_t> CandidateQueue::take() {
  const std::lock_guard lock(mutex_);
  if (next_ >= bounds_.size() || (prune_ && bounds_[next_] >= progress_.best)) return {};
  const std::size_t i = next_++;
  ++progress_.running;
  report_progress();
  return i;
}

void CandidateQueue::finish(std::size_t i, std::optional<StepReport> report,
                            std::exception_ptr error) {
  const std::lock_guard lock(mutex_);
  if (report) progress_.best = std::min(progress_.best, report->step_time);
  reports_[i] = std::move(report);
  errors_[i] = std::move(error);
  --progress_.running;
  ++progress_.simulated;
  report_progress();
}

void CandidateQueue::report_progress() {
  if (!progress_callback_) return;
  progress_.left_at_most = 0;
  for (std::size_t j = next_; j < bounds_.size() && (!prune_ || bounds_[j] < progress_.best); ++j)
    ++progress_.left_at_most;
  progress_callback_(progress_);
}

}  // namespace stepsim::search
