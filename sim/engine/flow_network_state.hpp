// Internal to the flow network (included by flow_network.cpp only, never by its users): what a
// FlowNetwork holds and does. The public FlowNetwork forwards to it, so that a change here
// recompiles the engine, not every user. See flow_network.hpp for the model; flow_tables.hpp for
// the classes, incremental_max_min.hpp for the solve, link_statistics_recorder.hpp for the
// statistics.
//
// Flows and parts: a flow is a FlowRecord; each of its paths that carries bytes is a Part, a member
// of the class of its path. A class drains a counter D (ClassDrain::drained); a part joining with b
// bytes finishes when D reaches its target D + b. The drain queue (drain_queue.hpp) holds every
// draining class by the picosecond its first target drains; one simulator event (the drain event)
// waits for the first.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "sim/engine/drain_queue.hpp"
#include "sim/engine/flat_index.hpp"
#include "sim/engine/flow_network.hpp"
#include "sim/engine/flow_tables.hpp"
#include "sim/engine/incremental_max_min.hpp"
#include "sim/engine/link_statistics_recorder.hpp"

namespace stepsim::engine {

class FlowNetwork::State : private Simulator::InstantEndListener {
 public:
  State(Simulator& simulator, FlowNetworkOptions options);
  State(const State&) = delete;
  State& operator=(const State&) = delete;
  ~State() override;

  // The FlowNetwork operations of the same names (flow_network.hpp).
  LinkId add_link(BytesPerSecond bandwidth, Time latency);
  // `rate_cap`: bytes/s per flow (per part of a flow on several paths), infinity for none.
  FlowId start_flow(std::int64_t source, std::int64_t destination, Bytes bytes,
                    std::span<const WeightedPath> paths, FlowCallback on_done,
                    double rate_cap = detail::kNoCap);
  FlowId start_sprayed_flow(std::int64_t source, std::int64_t destination, Bytes bytes,
                            std::span<const LinkShare> links, Time latency, FlowCallback on_done,
                            double rate_cap = detail::kNoCap);
  BytesPerSecond current_rate(FlowId flow) const;
  void set_link_aliases(std::span<const LinkId> representative);
  // The link whose statistics and load stand for `link` (itself without aliases).
  std::uint32_t stands_for(LinkId link) const {
    return alias_.empty() ? link.value() : alias_[link.value()];
  }
  LinkStatistics link_statistics(LinkId link) const;
  void restart_statistics();
  void check_invariants() const;

 private:
  friend class FlowNetwork;  // its accessors read the tables and counters directly
  struct Part {
    std::uint32_t flow = detail::kNone;
    std::uint32_t cls = detail::kNone;   // kNone once drained
    std::uint32_t next = detail::kNone;  // next part of the same flow
    double bytes = 0.0;
    double target = 0.0;
  };
  struct FlowRecord {
    FlowCallback on_done;
    std::int64_t source = 0;
    std::int64_t destination = 0;
    Bytes bytes;
    Time start;
    Time finish;
    std::uint32_t generation = 0;
    std::uint32_t parts_left = 0;
    std::uint32_t first_part = detail::kNone;
    bool active = false;
  };
  void on_instant_end() override { solve(); }
  // Records a change of `cls` and asks for a solve at the end of the instant.
  void mark_dirty(std::uint32_t cls);
  std::uint32_t acquire_flow();
  std::uint32_t acquire_part();
  // The class of `path` (with `shares` and `latency` for a sprayed one; empty shares: a plain
  // path, latency from its links).
  // A rate cap (bytes/s per flow, kNoCap for none) is part of a class's identity.
  std::uint32_t find_or_create_class(std::span<const LinkId> path,
                                     std::span<const double> shares = {},
                                     Time latency = Time::zero(), double rate_cap = detail::kNoCap);
  // A new class of `path` in a free slot (hash `h`, chained before `head`).
  std::uint32_t create_class(std::span<const LinkId> path, std::span<const double> shares,
                             Time latency, double rate_cap, std::uint64_t h, std::uint32_t head);
  void release_class(std::uint32_t cls);
  // The class joins (leaves) the lists of the links it crosses.
  void activate_class(std::uint32_t cls);
  void deactivate_class(std::uint32_t cls);
  void add_part(std::uint32_t flow, std::span<const LinkId> path, double bytes,
                std::span<const double> shares = {}, Time latency = Time::zero(),
                double rate_cap = detail::kNoCap);
  std::uint32_t start_record(std::int64_t source, std::int64_t destination, Bytes bytes,
                             FlowCallback on_done);
  FlowId finish_start(std::uint32_t flow);
  void finish_part(std::uint32_t part, Time at);
  // A sprayed flow's links sorted by link (sorted_links_), then each link once with its summed
  // share in path_scratch_ and share_scratch_; std::invalid_argument for an unknown link or a
  // share that is not positive and finite.
  void sort_links(std::span<const LinkShare> links);
  // A flow's rate cap must be positive (infinity: none), else std::invalid_argument.
  static void check_cap(double rate_cap);
  // Keeps the representatives of a sprayed flow's links (sorted, merged), checking its groups.
  void keep_representatives(std::vector<LinkId>& path, std::vector<double>& shares);
  void deliver(std::uint32_t flow);
  void drain_event();
  // Finishes the parts of `cls` due now (it has left the drain queue) and queues it again, or
  // retires it when no flow is left.
  void drain_class(std::uint32_t cls, Time now);
  // Finishes the parts of `cls` due now (with `now_ps`); returns how many.
  std::uint32_t finish_due_parts(std::uint32_t cls, Time now);
  void settle_class(std::uint32_t cls, std::int64_t now_ps);
  // When the class's first target drains at its current rate (whole picoseconds, rounded up).
  std::int64_t drain_end_ps(std::uint32_t cls) const;
  void update_drain_end(std::uint32_t cls);
  void reschedule_drain_event();
  // Sets the load of `link` at `now_ps` (statistics and samples follow).
  void set_link_load(std::uint32_t link, std::int64_t now_ps, double load);
  // With idle_tolerance: takes `departed` flows of `cls` (at its rate) off its links' loads now;
  // true when that leaves a link saturated at the last solve more idle than the tolerance.
  bool depart_needs_solve(std::uint32_t cls, std::uint32_t departed, std::int64_t now_ps);
  void solve();
  // Applies the component's new rates to its classes and links.
  void apply_rates(const detail::IncrementalMaxMin::Component& component, std::int64_t now_ps);
  double drained_link_bytes(std::int64_t now_ps) const;

  Simulator& sim_;
  FlowNetworkOptions options_;
  detail::FlowTables tables_;
  std::vector<Time> link_latency_;
  // set_link_aliases: per link its representative, per representative its group's size (1 when
  // alone), and per representative the members seen and their share (scratch, kept at 0).
  std::vector<std::uint32_t> alias_;
  std::vector<std::uint32_t> alias_members_;
  std::vector<std::uint32_t> alias_seen_;
  std::vector<double> alias_share_;
  // sort_links' output (scratch kept between flows).
  std::vector<LinkShare> sorted_links_;
  std::vector<LinkId> path_scratch_;
  std::vector<double> share_scratch_;
  std::vector<char> link_saturated_;  // at the last solve that covered the link (idle_tolerance)
  std::vector<std::uint32_t> free_classes_;
  // Path hash -> first class of its chain (next_same_hash); allocates nothing per class (classes
  // come and go with every flow of a training step).
  FlatIndex class_by_hash_;
  std::vector<Part> parts_;
  std::vector<std::uint32_t> free_parts_;
  std::vector<FlowRecord> flows_;
  std::vector<std::uint32_t> free_flows_;
  double finished_link_bytes_ = 0.0;  // sum over drained parts of bytes * path length
  double rounding_link_bytes_ = 0.0;  // bound on what rounding drain ends up added to the links
  detail::DrainQueue drain_queue_{tables_.drain};
  std::vector<std::uint32_t> due_;  // drain_event's scratch: the classes due at one end
  EventHandle drain_event_;
  std::int64_t drain_event_ps_ = -1;
  bool solve_requested_ = false;
  std::size_t active_flows_ = 0;
  std::uint64_t rate_updates_ = 0;
  std::uint64_t deferred_departures_ = 0;
  detail::LinkStatisticsRecorder stats_;
  // (Deferred departures take their load off the links at once: link_unsolved is kept only
  // without idle_tolerance.)
  detail::IncrementalMaxMin max_min_{tables_, options_.solve, options_.idle_tolerance == 0.0};
};

}  // namespace stepsim::engine
