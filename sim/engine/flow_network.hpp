// Flow-level network: flows share directed links with max-min fair rates.
//
// Model (docs/design.md, "Modeling decisions"):
//  - A link has a bandwidth (bytes/s) and a latency. Link ids are dense, 0..n-1 in insertion order.
//  - A flow moves `bytes` from a source to a destination (opaque integers, for reporting only) over
//    one path (a list of links) or over several paths with weights. A multi-path flow is split into
//    independent sub-flows, one per path, carrying bytes * weight / sum(weights) each (as with
//    per-flow ECMP spreading, a part that finds a free path finishes early); the flow completes
//    when its last part has completed.
//  - Rates are max-min fair over all active (sub-)flows (MaxMinSolver) and change only when flows
//    start or finish. A flow drains its bytes at the rates it gets over time; it completes when its
//    last byte has drained and crossed the path: finish = drain end + sum of the path's link
//    latencies. A zero-byte flow completes after the latency alone; a flow with an empty path
//    completes at once.
//
// Time handling: remaining bytes are doubles; a drain end is computed in picoseconds and rounded up
// (a flow never finishes before its bytes could drain), less a slack of 1e-3 ps + 1e-12 relative
// that absorbs floating-point noise, so that flows draining at the same exact time do not split
// into two instants one picosecond apart. Flows whose drain ends fall on the same picosecond finish
// as one instant.
//
// Batching: every start and finish of one instant marks the network dirty; one solve runs at the
// end of the instant (Simulator::request_instant_end), over the connected component of links and
// flow classes touched by the changes only (or over everything in full re-solve mode). Classes are
// coupled only through saturated links: the search crosses those, and a link with spare capacity
// that it reaches takes part as a boundary link (what the classes outside leave of it), crossed in
// turn only if the new rates fill it. When flows only leave, the classes with rates below the
// smallest departed rate keep their rates exactly (progressive filling freezes in increasing order
// of rate) and are left out of the solve.
//
// Flow classes: sub-flows on the identical link sequence are one class; max-min gives them equal
// rates, so the solver works per class. Each class drains a counter D (bytes drained by each of its
// flows since the class was created); a flow joining with b bytes finishes when D reaches D + b,
// so a class only tracks its smallest pending target. A rate that a re-solve changes by less than
// a relative 1e-12 is kept, so that unaffected flows are not rescheduled.
//
// The network must outlive every event it scheduled on the simulator (destroy the simulator first,
// or destroy the network only after run() returned).
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "sim/common/units.hpp"
#include "sim/engine/flat_index.hpp"
#include "sim/engine/ids.hpp"
#include "sim/engine/inline_function.hpp"
#include "sim/engine/max_min_solver.hpp"
#include "sim/engine/simulator.hpp"

namespace stepsim::engine {

// What a completion callback learns about its flow.
struct FlowCompletion {
  FlowId id;
  std::int64_t source = 0;
  std::int64_t destination = 0;
  Bytes bytes;
  Time start;
  Time finish;
};

using FlowCallback = InlineFunction<void(const FlowCompletion&), 48>;

// One of several paths of a flow, with its share of the bytes (weights need not sum to 1).
struct WeightedPath {
  std::span<const LinkId> links;
  double weight = 1.0;
};

// A link of a sprayed flow and the share of the flow's bytes that crosses it (0 < share, finite;
// a flow sprayed evenly over k parallel links puts 1/k on each, and 1 on the links all its
// paths share).
struct LinkShare {
  LinkId link;
  double share = 1.0;
  bool operator==(const LinkShare&) const = default;
};

// The largest idle tolerance (below) that scenarios and the command line accept; beyond it the
// rates would be too stale to mean much.
inline constexpr double kMaxIdleTolerance = 0.5;

struct FlowNetworkOptions {
  // Re-solve every active flow at every change instead of the touched component only. Slower;
  // kept to check the incremental solve against.
  bool full_resolve = false;
  // Deferred re-solves, an opt-in approximation (0, the default, is exact max-min). A departure
  // leaves the rates of the remaining flows as they are while every link that was saturated at
  // the last solve keeps its idle capacity within this fraction of its bandwidth; the departure
  // that would leave more idle (or any arrival) runs the solve, which then covers every deferred
  // departure. Rates stay feasible and bytes conserved; links run at least (1 - tolerance) of
  // what they carried at the last solve. Completion times come out later than exact max-min by
  // about the tolerance (docs/performance.md, "Idle tolerance"). Must be in [0, 1).
  double idle_tolerance = 0.0;
  // Record (time, utilization) on every change of a link's load.
  bool record_utilization_samples = false;
  // With record_utilization_samples: only for these links (ids as add_link returns them); empty:
  // every link. Samples of every link of a large network take gigabytes.
  std::vector<std::uint32_t> sampled_links = {};
};

// Per-link statistics over the statistics window (from the network's creation or the last
// restart_statistics() to now).
struct LinkStatistics {
  double bytes_carried = 0.0;
  Time busy_time;                // time with at least one flow draining through the link
  double utilization = 0.0;      // time-weighted: bytes_carried / (bandwidth * window length)
  std::uint32_t peak_flows = 0;  // most flows crossing the link at once (as seen by the solves)
};

struct UtilizationSample {
  Time time;
  double utilization = 0.0;  // load / bandwidth from `time` on
};

class FlowNetwork : private Simulator::InstantEndListener {
 public:
  explicit FlowNetwork(Simulator& simulator, FlowNetworkOptions options = {});
  FlowNetwork(const FlowNetwork&) = delete;
  FlowNetwork& operator=(const FlowNetwork&) = delete;
  ~FlowNetwork();

  // Adds a directed link. bandwidth > 0 and latency >= 0, else std::invalid_argument (the topology
  // validates user input before it gets here).
  LinkId add_link(BytesPerSecond bandwidth, Time latency);
  std::size_t link_count() const { return link_capacity_.size(); }
  BytesPerSecond bandwidth(LinkId link) const { return BytesPerSecond(link_capacity_[link.value]); }
  Time latency(LinkId link) const { return link_latency_[link.value]; }

  // Starts a flow now. `on_done` runs (as an event) when it completes. Unknown links or weights
  // that are not positive and finite throw std::invalid_argument.
  FlowId start_flow(std::int64_t source, std::int64_t destination, Bytes bytes,
                    std::span<const LinkId> path, FlowCallback on_done);
  FlowId start_flow(std::int64_t source, std::int64_t destination, Bytes bytes,
                    std::span<const WeightedPath> paths, FlowCallback on_done);
  // A sprayed flow (packet spraying, striping over parallel links): one flow whose bytes cross
  // every listed link in the given share, all parts at the same rate, as a sender that spreads
  // its packets evenly does. At rate r it loads each link with share * r, so its rate is set by
  // the link where share / (fair share) is largest. It completes `latency` after its last byte
  // drained (the longest of its paths' latencies, which the caller knows). Each link at most
  // once; shares must be positive and finite, else std::invalid_argument.
  FlowId start_sprayed_flow(std::int64_t source, std::int64_t destination, Bytes bytes,
                            std::span<const LinkShare> links, Time latency, FlowCallback on_done);

  // Flows started and not yet completed (including ones whose last byte is crossing the latency).
  std::size_t active_flows() const { return active_flows_; }
  // The flow's current rate in bytes/s, summed over its parts still draining; 0 once drained or
  // unknown. Reflects the last solve (the end of the last instant with changes).
  BytesPerSecond current_rate(FlowId flow) const;
  // Current load of a link (sum of the rates crossing it), as of the last solve; with
  // idle_tolerance, less the departures it deferred since.
  BytesPerSecond load(LinkId link) const { return BytesPerSecond(link_load_[link.value]); }

  LinkStatistics link_statistics(LinkId link) const;
  // Starts a new statistics window now (bytes, busy time and peaks from zero; samples cleared).
  void restart_statistics();
  std::span<const UtilizationSample> utilization_samples(LinkId link) const;

  // Number of max-min solves run so far (one per instant with changes).
  std::uint64_t solves() const { return solves_; }
  // Number of class rates the solves changed, and the classes they covered (work measures).
  std::uint64_t rate_updates() const { return rate_updates_; }
  std::uint64_t classes_solved() const { return classes_solved_; }
  // With idle_tolerance: departures whose re-solve was deferred.
  std::uint64_t deferred_departures() const { return deferred_departures_; }
  // Solves repeated because a link with spare capacity filled up and joined the component.
  std::uint64_t boundary_expansions() const { return boundary_expansions_; }

  // Checks the invariants and throws std::logic_error naming the first broken one: no link above
  // its bandwidth (relative 1e-9), link loads equal the sum of their flows' rates, rates finite and
  // >= 0 (and > 0 for draining flows), remaining bytes within [0, bytes], bytes conserved (bytes
  // carried by the links = bytes drained by the flows times their path lengths, relative 1e-9,
  // plus up to one picosecond of each finished part's rate for the rounding of drain ends),
  // and a drain event pending whenever flows are draining (so every flow finishes).
  void check_invariants() const;

 private:
  static constexpr std::uint32_t kNone = 0xffffffffu;

  // A class's fields are split in three by use. What the component search, the boundary sums and
  // the local problem read for every class they visit (often thousands per solve, in an order
  // that defeats the caches) is one cache line, ClassHot, path included when it is short; what a
  // rate change and the drain heap need is ClassDrain (half a line); the rest, read when flows
  // start or finish, is FlowClass.
  static constexpr std::size_t kInlinePath = 11;  // fills ClassHot's cache line
  // Set in ClassHot::path_size for a sprayed class: its links are in FlowClass::long_path (at any
  // length) and their shares in FlowClass::shares.
  static constexpr std::uint32_t kSprayedBit = 0x80000000u;
  struct alignas(64) ClassHot {
    double rate = 0.0;  // bytes/s per flow
    std::uint32_t flows = 0;
    std::uint32_t mark = 0;       // component search stamp
    std::uint32_t path_size = 0;  // links, | kSprayedBit for a sprayed class
    // The path when it has at most kInlinePath links (else in FlowClass::long_path).
    std::uint32_t path[kInlinePath] = {};
  };
  static_assert(sizeof(ClassHot) == 64);
  // (A class's drain end is kept in its drain heap entry only.)
  struct alignas(32) ClassDrain {
    double drained = 0.0;         // D: bytes drained by each flow of the class since its creation
    std::int64_t settled_ps = 0;  // time up to which `drained` is computed
    double first_target = 0.0;    // FlowClass::targets.front().first (when active)
    std::uint32_t heap_pos = kNone;  // position in drain_heap_
  };
  static_assert(sizeof(ClassDrain) == 32);
  struct FlowClass {
    std::vector<std::uint32_t> long_path;     // the path when longer than kInlinePath links
    std::vector<double> shares;               // a sprayed class's share per link (else empty)
    double link_bytes_per_byte = 0.0;         // sum of the shares (the path length unsprayed)
    std::vector<std::uint32_t> slot_in_link;  // position in link_classes_[path[i]] when active
    std::vector<std::pair<double, std::uint32_t>> targets;  // min-heap of (D target, part)
    std::uint64_t hash = 0;
    Time latency;
    std::uint32_t next_same_hash = kNone;
    bool dirty = false;
    bool in_use = false;
  };
  struct Part {
    std::uint32_t flow = kNone;
    std::uint32_t cls = kNone;   // kNone once drained
    std::uint32_t next = kNone;  // next part of the same flow
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
    std::uint32_t first_part = kNone;
    bool active = false;
  };

  void on_instant_end() override;
  void mark_dirty(std::uint32_t cls);
  std::uint32_t acquire_flow();
  // The class of `path` (with `shares` and `latency` for a sprayed one; empty shares: a plain
  // path, latency from its links).
  std::uint32_t find_or_create_class(std::span<const LinkId> path,
                                     std::span<const double> shares = {},
                                     Time latency = Time::zero());
  void release_class(std::uint32_t cls);
  void add_part(std::uint32_t flow, std::span<const LinkId> path, double bytes,
                std::span<const double> shares = {}, Time latency = Time::zero());
  std::uint32_t start_record(std::int64_t source, std::int64_t destination, Bytes bytes,
                             FlowCallback on_done);
  FlowId finish_start(std::uint32_t flow);
  void finish_part(std::uint32_t part, Time at);
  void deliver(std::uint32_t flow);
  void drain_event();
  // The class's links, from ClassHot or FlowClass::long_path.
  std::span<const std::uint32_t> path(std::uint32_t cls) const {
    const ClassHot& h = hot_[cls];
    return h.path_size <= kInlinePath ? std::span<const std::uint32_t>(h.path, h.path_size)
                                      : std::span<const std::uint32_t>(classes_[cls].long_path);
  }
  static bool sprayed(const ClassHot& h) { return (h.path_size & kSprayedBit) != 0; }
  // The share of class `cls` on the i-th link of its path (1 unless sprayed).
  double share(std::uint32_t cls, std::size_t i) const {
    return sprayed(hot_[cls]) ? classes_[cls].shares[i] : 1.0;
  }
  void settle_class(std::uint32_t cls, std::int64_t now_ps);
  // When the class's first target drains at its current rate (whole picoseconds, rounded up).
  std::int64_t drain_end_ps(std::uint32_t cls) const;
  void update_drain_end(std::uint32_t cls);
  void reschedule_drain_event();
  void settle_link(std::uint32_t link, std::int64_t now_ps);
  void record_sample(std::uint32_t link, std::int64_t now_ps, double old_load);
  // With idle_tolerance: takes `departed` flows of `cls` (at its rate) off its links' loads now;
  // true when that leaves a link saturated at the last solve more idle than the tolerance.
  bool depart_needs_solve(std::uint32_t cls, std::uint32_t departed, std::int64_t now_ps);
  void solve();

  // Indexed min-heap of active classes on (drain_end_ps, class index).
  // Puts the class in the heap with drain end `end_ps`, or moves it there.
  void heap_place(std::uint32_t cls, std::int64_t end_ps);
  void heap_remove(std::uint32_t cls);
  void heap_sift_up(std::uint32_t pos);
  void heap_sift_down(std::uint32_t pos);

  Simulator& sim_;
  FlowNetworkOptions options_;

  // Links (struct of arrays).
  std::vector<double> link_capacity_;
  std::vector<Time> link_latency_;
  std::vector<std::vector<std::uint32_t>> link_classes_;  // active classes crossing the link
  // Parallel to link_classes_: the share of each of those classes on the link (1 unless sprayed).
  std::vector<std::vector<double>> link_shares_;
  std::vector<double> link_load_;
  std::vector<std::uint32_t> link_flows_;
  std::vector<double> link_bytes_;           // in the statistics window
  std::vector<double> link_lifetime_bytes_;  // since creation, for the conservation check
  std::vector<std::int64_t> link_busy_ps_;
  std::vector<std::int64_t> link_settled_ps_;
  std::vector<std::uint32_t> link_peak_flows_;
  std::vector<std::vector<UtilizationSample>> link_samples_;
  std::vector<char> link_saturated_;  // at the last solve that covered the link (idle_tolerance)
  std::vector<std::uint32_t> link_mark_;
  std::vector<std::uint32_t> link_local_;
  std::int64_t window_start_ps_ = 0;

  // Classes, parts, flows.
  std::vector<FlowClass> classes_;
  std::vector<ClassHot> hot_;      // parallel to classes_
  std::vector<ClassDrain> drain_;  // parallel to classes_
  std::vector<std::uint32_t> free_classes_;
  // Path hash -> first class of its chain (next_same_hash); allocates nothing per class (classes
  // come and go with every flow of a training step).
  FlatIndex class_by_hash_;
  std::vector<Part> parts_;
  std::vector<std::uint32_t> free_parts_;
  std::vector<FlowRecord> flows_;
  std::vector<std::uint32_t> free_flows_;
  std::size_t active_flows_ = 0;
  double finished_link_bytes_ = 0.0;  // sum over drained parts of bytes * path length
  double rounding_link_bytes_ = 0.0;  // bound on what rounding drain ends up added to the links

  // Drain scheduling.
  // The heap holds each class's drain end beside its index, so that sifting reads no class.
  struct DrainEntry {
    std::int64_t end_ps;
    std::uint32_t cls;
    bool before(const DrainEntry& o) const {
      return end_ps < o.end_ps || (end_ps == o.end_ps && cls < o.cls);
    }
  };
  std::vector<DrainEntry> drain_heap_;
  EventHandle drain_event_;
  std::int64_t drain_event_ps_ = -1;

  // Solving.
  std::vector<std::uint32_t> dirty_;
  // What the changes of this instant were: a flow arrived, and the smallest rate of the flows that
  // drained (+infinity when none); they decide which classes keep their rates (solve()).
  bool instant_has_arrival_ = false;
  double instant_min_departed_rate_ = std::numeric_limits<double>::infinity();
  bool solve_requested_ = false;
  std::uint32_t stamp_ = 0;
  std::uint64_t solves_ = 0;
  std::uint64_t rate_updates_ = 0;
  std::uint64_t classes_solved_ = 0;
  MaxMinSolver solver_;
  std::vector<std::uint32_t> comp_links_;
  std::vector<std::uint32_t> comp_classes_;
  std::vector<double> local_capacity_;
  std::vector<std::uint32_t> local_flows_;
  std::vector<std::uint32_t> local_offsets_;
  std::vector<std::uint32_t> local_path_;
  std::vector<double> local_share_;  // parallel to local_path_ when the component has sprays
  std::vector<double> local_rate_;
  std::vector<double> local_load_;
  std::vector<std::uint32_t> local_count_;
  std::vector<double> local_fixed_load_;  // per component link: load of the classes kept fixed
  std::vector<std::uint32_t> local_fixed_count_;
  std::vector<char> link_sampled_;  // per link: record its utilization samples
  std::vector<char> comp_crossed_;  // per component link: crossed by the search (else boundary)
  std::vector<std::uint32_t> scan_queue_;  // links whose classes the search still has to visit
  std::uint64_t boundary_expansions_ = 0;
  std::uint64_t deferred_departures_ = 0;
};

}  // namespace stepsim::engine
