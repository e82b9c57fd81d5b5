// Internal to the flow network: per-link statistics over a window of simulated time. It integrates
// each link's load (bytes/s) over time into bytes carried and busy time, keeps the most flows seen
// on each link at once, and, where asked, a sample of the utilization (load / bandwidth) at every
// change of load. The flow network tells it the load before every change (settle) and the new load
// and flow count after (record_sample, set_flows).
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "sim/engine/drain_time.hpp"
#include "sim/engine/flow_network.hpp"

namespace stepsim::engine::detail {

class LinkStatisticsRecorder {
 public:
  // Window from `now_ps`. With `record_samples`: samples of the links in `sampled_links` (sorted
  // ids), or of every link when it is empty.
  LinkStatisticsRecorder(std::int64_t now_ps, bool record_samples,
                         std::vector<std::uint32_t> sampled_links);

  void add_link(std::int64_t now_ps);
  // Counts the link's `load` (bytes/s) from the last settle up to `now_ps`: call before the load
  // changes.
  void settle(std::uint32_t link, std::int64_t now_ps, double load) {
    Link& k = links_[link];
    const std::int64_t dt = now_ps - k.settled_ps;
    if (dt > 0) {
      const double bytes = load * (static_cast<double>(dt) * kSecondsPerPs);
      k.bytes += bytes;
      k.lifetime_bytes += bytes;
      if (load > 0.0) k.busy_ps += dt;
      k.settled_ps = now_ps;
    }
  }
  // Records the load that changed from `old_load` to `load` at `now_ps` (a sampled link only, and
  // only for a change above 1e-12 of the bandwidth `capacity`).
  void record_sample(std::uint32_t link, std::int64_t now_ps, double old_load, double load,
                     double capacity) {
    if (links_[link].sampled != 0) add_sample(link, now_ps, old_load, load, capacity);
  }
  // The flows crossing the link now (as seen by a solve); raises the peak.
  void set_flows(std::uint32_t link, std::uint32_t flows) {
    Link& k = links_[link];
    k.flows = flows;
    k.peak_flows = std::max(k.peak_flows, flows);
  }
  // `departed` flows left the link before a solve counted them (at most as many as it holds).
  void remove_flows(std::uint32_t link, std::uint32_t departed) {
    Link& k = links_[link];
    k.flows -= std::min(departed, k.flows);
  }

  // The link's statistics at `now_ps`, with its current `load` and bandwidth `capacity`.
  LinkStatistics statistics(std::uint32_t link, std::int64_t now_ps, double load,
                            double capacity) const;
  // Starts a new window at `now_ps` (each link at its current load in `loads`).
  void restart(std::int64_t now_ps, std::span<const double> loads);
  std::span<const UtilizationSample> samples(std::uint32_t link) const { return samples_[link]; }
  // Whether the link's samples are recorded; sample() records them from now on (when samples are
  // recorded at all).
  bool sampled(std::uint32_t link) const { return links_[link].sampled != 0; }
  void sample(std::uint32_t link) {
    if (record_samples_) links_[link].sampled = 1;
  }
  // Bytes carried since the link was created, up to its last settle (for the conservation check).
  double lifetime_bytes(std::uint32_t link) const { return links_[link].lifetime_bytes; }
  std::int64_t settled_ps(std::uint32_t link) const { return links_[link].settled_ps; }

 private:
  // What is kept per link, together (a solve settles every link of its component).
  struct Link {
    std::int64_t settled_ps = 0;
    std::int64_t busy_ps = 0;
    double bytes = 0.0;           // in the window
    double lifetime_bytes = 0.0;  // since creation
    std::uint32_t flows = 0;
    std::uint32_t peak_flows = 0;
    char sampled = 0;  // record its utilization samples
  };
  void add_sample(std::uint32_t link, std::int64_t now_ps, double old_load, double load,
                  double capacity);

  bool record_samples_;
  std::vector<std::uint32_t> sampled_links_;
  std::int64_t window_start_ps_;
  std::vector<Link> links_;
  std::vector<std::vector<UtilizationSample>> samples_;
};

}  // namespace stepsim::engine::detail
