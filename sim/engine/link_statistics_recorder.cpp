#include "sim/engine/link_statistics_recorder.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace stepsim::engine::detail {
namespace {

// A load change smaller than this (relative to the bandwidth) is no new sample: the rates that a
// re-solve keeps move loads by rounding noise only.
constexpr double kSampleTolerance = 1e-12;

}  // namespace

LinkStatisticsRecorder::LinkStatisticsRecorder(std::int64_t now_ps, bool record_samples,
                                               std::vector<std::uint32_t> sampled_links)
    : record_samples_(record_samples),
      sampled_links_(std::move(sampled_links)),
      window_start_ps_(now_ps) {}

void LinkStatisticsRecorder::add_link(std::int64_t now_ps) {
  const auto link = static_cast<std::uint32_t>(links_.size());
  Link& k = links_.emplace_back();
  k.settled_ps = now_ps;
  samples_.emplace_back();
  const bool sampled =
      record_samples_ && (sampled_links_.empty() ||
                          std::binary_search(sampled_links_.begin(), sampled_links_.end(), link));
  k.sampled = sampled ? 1 : 0;
}

void LinkStatisticsRecorder::add_sample(std::uint32_t link, std::int64_t now_ps, double old_load,
                                        double load, double capacity) {
  if (std::fabs(load - old_load) <= kSampleTolerance * capacity) return;
  std::vector<UtilizationSample>& samples = samples_[link];
  const UtilizationSample sample{Time::ps(now_ps), load / capacity};
  if (!samples.empty() && samples.back().time == sample.time) {
    samples.back() = sample;
  } else {
    samples.push_back(sample);
  }
}

LinkStatistics LinkStatisticsRecorder::statistics(std::uint32_t link, std::int64_t now_ps,
                                                  double load, double capacity) const {
  const Link& k = links_[link];
  const std::int64_t dt = now_ps - k.settled_ps;
  LinkStatistics s;
  s.bytes_carried = k.bytes + load * (static_cast<double>(dt) * kSecondsPerPs);
  s.busy_time = Time::ps(k.busy_ps + (load > 0.0 ? dt : 0));
  const std::int64_t window_ps = now_ps - window_start_ps_;
  s.utilization =
      window_ps > 0 ? s.bytes_carried / (capacity * static_cast<double>(window_ps) * kSecondsPerPs)
                    : 0.0;
  s.peak_flows = k.peak_flows;
  return s;
}

void LinkStatisticsRecorder::restart(std::int64_t now_ps, std::span<const double> loads) {
  for (std::uint32_t l = 0; l < links_.size(); ++l) {
    settle(l, now_ps, loads[l]);
    Link& k = links_[l];
    k.bytes = 0.0;
    k.busy_ps = 0;
    k.peak_flows = k.flows;
    samples_[l].clear();
  }
  window_start_ps_ = now_ps;
}

}  // namespace stepsim::engine::detail
