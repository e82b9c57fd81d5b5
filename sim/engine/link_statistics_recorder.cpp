#include "sim/engine/link_statistics_recorder.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace stepsim::engine::detail {
namespace {

constexpr double kSecondsPerPs = 1e-12;
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
  bytes_.push_back(0.0);
  lifetime_bytes_.push_back(0.0);
  busy_ps_.push_back(0);
  settled_ps_.push_back(now_ps);
  flows_.push_back(0);
  peak_flows_.push_back(0);
  samples_.emplace_back();
  const auto link = static_cast<std::uint32_t>(sampled_.size());
  const bool sampled =
      record_samples_ && (sampled_links_.empty() ||
                          std::binary_search(sampled_links_.begin(), sampled_links_.end(), link));
  sampled_.push_back(sampled ? 1 : 0);
}

void LinkStatisticsRecorder::settle(std::uint32_t link, std::int64_t now_ps, double load) {
  const std::int64_t dt = now_ps - settled_ps_[link];
  if (dt > 0) {
    const double bytes = load * (static_cast<double>(dt) * kSecondsPerPs);
    bytes_[link] += bytes;
    lifetime_bytes_[link] += bytes;
    if (load > 0.0) busy_ps_[link] += dt;
    settled_ps_[link] = now_ps;
  }
}

void LinkStatisticsRecorder::record_sample(std::uint32_t link, std::int64_t now_ps, double old_load,
                                           double load, double capacity) {
  if (sampled_[link] == 0 || std::fabs(load - old_load) <= kSampleTolerance * capacity) return;
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
  const std::int64_t dt = now_ps - settled_ps_[link];
  LinkStatistics s;
  s.bytes_carried = bytes_[link] + load * (static_cast<double>(dt) * kSecondsPerPs);
  s.busy_time = Time::ps(busy_ps_[link] + (load > 0.0 ? dt : 0));
  const std::int64_t window_ps = now_ps - window_start_ps_;
  s.utilization =
      window_ps > 0 ? s.bytes_carried / (capacity * static_cast<double>(window_ps) * kSecondsPerPs)
                    : 0.0;
  s.peak_flows = peak_flows_[link];
  return s;
}

void LinkStatisticsRecorder::restart(std::int64_t now_ps, std::span<const double> loads) {
  for (std::uint32_t l = 0; l < bytes_.size(); ++l) {
    settle(l, now_ps, loads[l]);
    bytes_[l] = 0.0;
    busy_ps_[l] = 0;
    peak_flows_[l] = flows_[l];
    samples_[l].clear();
  }
  window_start_ps_ = now_ps;
}

}  // namespace stepsim::engine::detail
