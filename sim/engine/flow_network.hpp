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
// flow classes touched by the changes only (or over everything: SolveStrategy). Classes are
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
#include <memory>
#include <span>
#include <vector>

#include "sim/common/units.hpp"
#include "sim/engine/ids.hpp"
#include "sim/engine/inline_function.hpp"
#include "sim/engine/simulator.hpp"
#include "sim/engine/solve_strategy.hpp"

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
  // The exact max-min solve run at the end of each instant with changes (solve_strategy.hpp): the
  // simulator's incremental one, or a reference without its shortcuts (tests and benchmarks).
  // With idle_tolerance no boundary link is bounded, whatever the strategy (the bound needs the
  // departures it defers).
  SolveStrategy solve = SolveStrategy::kIncremental;
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

class FlowNetwork {
 public:
  explicit FlowNetwork(Simulator& simulator, FlowNetworkOptions options = {});
  FlowNetwork(const FlowNetwork&) = delete;
  FlowNetwork& operator=(const FlowNetwork&) = delete;
  ~FlowNetwork();

  // Adds a directed link. bandwidth > 0 and latency >= 0, else std::invalid_argument (the topology
  // validates user input before it gets here).
  LinkId add_link(BytesPerSecond bandwidth, Time latency);
  std::size_t link_count() const;
  BytesPerSecond bandwidth(LinkId link) const;
  Time latency(LinkId link) const;

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
  // drained (the longest of its paths' latencies, which the caller knows). A link listed more
  // than once carries the sum of its shares (a route through a relay is its two parts listed one
  // after the other); shares must be positive and finite, else std::invalid_argument.
  FlowId start_sprayed_flow(std::int64_t source, std::int64_t destination, Bytes bytes,
                            std::span<const LinkShare> links, Time latency, FlowCallback on_done);
  // The same with a cap on the flow's rate, whatever its links leave it (a bound the links do not
  // show: what one sender's thread blocks move, say): max-min fair rates with that limit, as a
  // private link of that bandwidth on its path would give, without the link. rate_cap must be
  // positive (infinity: none), else std::invalid_argument.
  FlowId start_flow(std::int64_t source, std::int64_t destination, Bytes bytes,
                    std::span<const LinkId> path, BytesPerSecond rate_cap, FlowCallback on_done);
  FlowId start_sprayed_flow(std::int64_t source, std::int64_t destination, Bytes bytes,
                            std::span<const LinkShare> links, Time latency, BytesPerSecond rate_cap,
                            FlowCallback on_done);

  // Links that every flow loads alike (topology::symmetric_link_representatives):
  // representative[l] is the lowest-index link of l's group (l itself when it has none), of the
  // same bandwidth. The network then keeps only representatives in its flow classes: the max-min
  // problem loses constraints that repeat another, not its answer (the same rates to the bit). A
  // sprayed flow must list every member of a group it crosses, each with the same share (or the
  // representative alone: keep_representatives), and a flow on paths must cross none, else
  // std::logic_error (the caller's groups are wrong). A
  // member's statistics, load and samples are its representative's. Call before the first flow;
  // an empty span keeps every link.
  void set_link_aliases(std::span<const LinkId> representative);
  // Keeps one link of each aliased group in a sprayed flow's links (as start_sprayed_flow takes
  // them), checking the groups as start_sprayed_flow does; the result is sorted by link, each link
  // once. start_sprayed_flow takes it as it is: a group listed by its representative alone stands
  // for the whole group. For callers that start many flows on one route.
  void keep_representatives(std::vector<LinkShare>& links);

  // Flows started and not yet completed (including ones whose last byte is crossing the latency).
  std::size_t active_flows() const;
  // The flow's current rate in bytes/s, summed over its parts still draining; 0 once drained or
  // unknown. Reflects the last solve (the end of the last instant with changes).
  BytesPerSecond current_rate(FlowId flow) const;
  // Current load of a link (sum of the rates crossing it), as of the last solve; with
  // idle_tolerance, less the departures it deferred since.
  BytesPerSecond load(LinkId link) const;

  LinkStatistics link_statistics(LinkId link) const;
  // Starts a new statistics window now (bytes, busy time and peaks from zero; samples cleared).
  void restart_statistics();
  std::span<const UtilizationSample> utilization_samples(LinkId link) const;

  // Number of max-min solves run so far (one per instant with changes).
  std::uint64_t solves() const;
  // Number of class rates the solves changed, and the classes they covered (work measures).
  std::uint64_t rate_updates() const;
  std::uint64_t classes_solved() const;
  // With idle_tolerance: departures whose re-solve was deferred.
  std::uint64_t deferred_departures() const;
  // Solves repeated because a link with spare capacity filled up and joined the component.
  std::uint64_t boundary_expansions() const;
  // Classes of the solves whose rates were those of a twin part, copied rather than solved
  // (twin_parts.hpp).
  std::uint64_t twin_classes() const;
  // Boundary links whose outside load a solve bounded instead of summing it (exact max-min all
  // the same; incremental_max_min.hpp), and those of them that came near saturation and were
  // summed after all.
  std::uint64_t boundary_estimates() const;
  std::uint64_t boundary_estimates_refused() const;
  // Classes that solves with an arrival left out because their rates stood below every arrival's
  // lower bound (incremental_max_min.hpp, "Fixed classes"), counted on each saturated link of the
  // component they cross: a work measure of the re-solves saved.
  std::uint64_t kept_at_arrivals() const;

  // Checks the invariants and throws std::logic_error naming the first broken one: no link above
  // its bandwidth (relative 1e-9), link loads equal the sum of their flows' rates, rates finite and
  // >= 0 (and > 0 for draining flows), remaining bytes within [0, bytes], bytes conserved (bytes
  // carried by the links = bytes drained by the flows times their path lengths, relative 1e-9,
  // plus up to one picosecond of each finished part's rate for the rounding of drain ends),
  // and a drain event pending whenever flows are draining (so every flow finishes).
  void check_invariants() const;

 private:
  // Everything else (flow_network_state.hpp), behind a pointer so that users see none of it.
  class State;
  std::unique_ptr<State> state_;
};

}  // namespace stepsim::engine
