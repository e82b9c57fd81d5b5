// Prototype (issue 16): exact max-min rates held per bottleneck level, for flows that all start
// at time 0 and drain to completion (the all-to-all of BM_AllToAll). Not used by FlowNetwork yet;
// it exists to measure what holding rates per level costs against the per-class solve, and is
// checked against FlowNetwork's completion times (tests/engine/level_rates_test.cpp).
//
// Model. As FlowNetwork (flow_network.hpp): links with capacities and latencies, flows on paths
// (each link at most once per path), max-min fair rates re-solved at every instant with
// departures, drain ends rounded up to the picosecond with the same slack, finish = drain end +
// the path's latency. Flows on one path are one class.
//
// Levels. In a max-min allocation every class c has a bottleneck b(c): a saturated link where its
// rate is the largest, so r_c = x_b(c), the level of that link. Progressive filling freezes the
// classes of each link in increasing order of level (the order pi); a class crosses, besides its
// bottleneck, only links that come later in pi or that never freeze anything (ungrouped links).
// With that order fixed, the levels solve a triangular system:
//     x_l = (C_l - F_l) / N_l,   F_l = sum over classes c on l with b(c) != l of n_c x_b(c),
// N_l the flows bottlenecked at l. A change of x_k by d adds n_c d to F_m for every class c of
// k's group and every other link m it crosses, and moves the levels after k in pi. So a departure
// costs the group members whose level really changes (no heap, no per-class rate), and the
// result is max-min fair as long as (a) the levels stay nondecreasing along pi and (b) every
// ungrouped link stays within its capacity. Both are checked after each update (relative
// tolerance kLevelTolerance); when one fails, the whole problem is re-solved by progressive
// filling (MaxMinSolver), which gives the new groups and order.
//
// Clocks. The flows of one group drain at the same rate, so each group keeps a clock V_l (bytes
// drained per flow since an arbitrary origin) and each flow a target on its group's clock: a level
// change is one update of the group's clock, not one per flow. A flow whose class changes group
// has its target moved to the new clock. Each group keeps a heap of its flows' targets, and a
// heap of groups by the picosecond their first flow drains gives the next instant.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <utility>
#include <vector>

#include "sim/engine/indexed_heap.hpp"
#include "sim/engine/max_min_solver.hpp"

namespace stepsim::engine {

class LevelRates {
 public:
  // Two levels within this (relative) count as equal in the order check, and an ungrouped link
  // may exceed its capacity by this much; beyond it the problem is re-solved.
  static constexpr double kLevelTolerance = 1e-12;

  // A link of `capacity` bytes/s (> 0) and `latency_ps` (>= 0); ids are dense from 0.
  std::uint32_t add_link(double capacity, std::int64_t latency_ps);
  // A flow of `bytes` (>= 0) on `path` (known links, each at most once), starting at time 0.
  // Flow ids are dense from 0 in the order added.
  std::uint32_t add_flow(std::span<const std::uint32_t> path, double bytes);
  // Drains every flow; finish_ps() then holds each flow's completion time.
  void run();
  std::span<const std::int64_t> finish_ps() const { return finish_ps_; }

  // Work measures.
  struct Counters {
    std::uint64_t instants = 0;           // instants with departures
    std::uint64_t full_solves = 0;        // progressive filling over every active class
    std::uint64_t level_solves = 0;       // triangular updates that held
    std::uint64_t level_updates = 0;      // group levels changed (clock updates)
    std::uint64_t member_visits = 0;      // classes visited to pass a level change on
    std::uint64_t classes_solved = 0;     // classes in the full solves
    std::uint64_t class_moves = 0;        // classes whose group a full solve changed
    std::uint64_t fallback_order = 0;     // updates refused: levels out of order
    std::uint64_t fallback_capacity = 0;  // updates refused: an ungrouped link over capacity
    std::uint64_t partial_solves = 0;     // group progressive fillings (above)
    std::uint64_t classes_in_play = 0;    // classes they re-solved
    std::uint64_t link_scans = 0;         // classes read in link lists (outside members)
  };
  const Counters& counters() const { return counters_; }

 private:
  static constexpr std::uint32_t kNone = 0xffffffffu;
  struct Target {
    double target;  // on the group's clock
    std::uint32_t flow;
    bool operator>(const Target& o) const {
      return target > o.target || (target == o.target && flow > o.flow);
    }
  };
  struct GroupEnd {
    std::int64_t end_ps;
    std::uint32_t link;
  };
  struct EndsFirst {
    bool operator()(const GroupEnd& a, const GroupEnd& b) const {
      return a.end_ps < b.end_ps || (a.end_ps == b.end_ps && a.link < b.link);
    }
  };
  struct EndPosition {
    std::vector<std::uint32_t>* pos;
    void operator()(const GroupEnd& e, std::uint32_t p) const { (*pos)[e.link] = p; }
  };

  std::span<const std::uint32_t> path(std::uint32_t cls) const {
    return {path_.data() + path_offset_[cls], path_offset_[cls + 1] - path_offset_[cls]};
  }
  void settle(std::uint32_t link, std::int64_t now_ps);
  // The first live target of the group (stale entries dropped), or nullptr.
  const Target* first_target(std::uint32_t link);
  void update_end(std::uint32_t link);
  // The flow (just taken off its group's heap) finishes now.
  void depart(std::uint32_t flow, std::int64_t now_ps);
  // Triangular update of the levels after departures; false when the checks refuse it.
  bool update_levels(std::int64_t now_ps);
  void full_solve(std::int64_t now_ps);
  // Progressive filling of the groups at or above the smallest departed level only, frozen by
  // links, with the old groups as hints; exact max-min.
  void partial_solve(std::int64_t now_ps);
  // Freezes class `cls` (crossing link `at`) at `level` in the partial solve.
  void freeze(std::uint32_t cls, std::uint32_t at, double level, std::int64_t now_ps);
  void move_class(std::uint32_t cls, std::uint32_t to);
  void mark_dirty(std::uint32_t link);

  // Links.
  std::vector<double> capacity_;
  std::vector<std::int64_t> latency_ps_;
  std::vector<double> foreign_;                      // F_l
  std::vector<std::uint32_t> group_flows_;           // N_l (0: ungrouped)
  std::vector<double> level_;                        // x_l (0 when ungrouped)
  std::vector<double> clock_;                        // V_l
  std::vector<std::int64_t> clock_ps_;               // time V_l is settled to
  std::vector<std::vector<std::uint32_t>> members_;  // classes of the group
  std::vector<std::vector<Target>> targets_;         // min-heap per group, lazily cleaned
  std::vector<std::uint32_t> order_pos_;             // position in order_, kNone: ungrouped
  std::vector<std::uint32_t> order_;                 // pi: grouped links by level
  std::vector<char> dirty_;
  std::uint32_t first_dirty_ = kNone;  // smallest order position marked dirty
  std::vector<std::uint32_t> touched_ungrouped_;
  std::vector<char> touched_mark_;
  std::vector<std::uint32_t> end_pos_;
  std::vector<double> link_load_;  // L_l, at the levels of the last solve less departures since
  std::vector<std::vector<std::uint32_t>> link_classes_;  // classes on the link (lazily pruned)
  double min_departed_level_ = 0.0;
  bool any_departure_ = false;
  // Partial solve scratch, per link.
  std::vector<double> remaining_;
  std::vector<std::uint64_t> unfrozen_;
  std::vector<std::uint64_t> unfrozen_members_;  // unfrozen flows of the old group's members
  std::vector<std::uint32_t> link_stamp_;
  std::vector<std::uint32_t> touched_links_;
  std::vector<std::uint32_t> heap_pos_;
  struct ShareEntry {
    double key;
    std::uint32_t link;
  };
  struct SmallerShare {
    bool operator()(const ShareEntry& a, const ShareEntry& b) const {
      return a.key < b.key || (a.key == b.key && a.link < b.link);
    }
  };
  struct SharePosition {
    std::vector<std::uint32_t>* pos;
    void operator()(const ShareEntry& e, std::uint32_t p) const { (*pos)[e.link] = p; }
  };
  IndexedHeap<ShareEntry, SmallerShare, SharePosition> shares_{SharePosition{&heap_pos_}};
  std::uint32_t stamp_ = 0;
  std::vector<std::uint32_t> class_in_play_;  // per class: stamp when in play
  std::vector<std::uint32_t> class_frozen_;   // per class: stamp when frozen
  std::vector<std::uint32_t> new_order_;
  std::vector<std::uint32_t> new_members_;
  std::vector<std::uint32_t> freeze_touched_;
  IndexedHeap<GroupEnd, EndsFirst, EndPosition> ends_{EndPosition{&end_pos_}};

  // Classes.
  std::vector<std::uint32_t> path_offset_{0};
  std::vector<std::uint32_t> path_;
  std::vector<std::int64_t> class_latency_ps_;
  std::vector<std::uint32_t> class_flows_;                   // n_c
  std::vector<std::uint32_t> group_;                         // b(c)
  std::vector<std::uint32_t> member_pos_;                    // position in members_[b(c)]
  std::vector<std::vector<std::uint32_t>> class_flow_list_;  // its draining flows
  std::map<std::vector<std::uint32_t>, std::uint32_t> class_of_path_;

  // Flows.
  std::vector<std::uint32_t> flow_class_;
  std::vector<double> target_;  // on the clock of its class's group
  std::vector<char> done_;
  std::vector<std::int64_t> finish_ps_;

  // Scratch.
  std::vector<std::uint32_t> changed_;
  std::vector<std::uint32_t> active_;
  std::vector<std::uint32_t> offsets_;
  std::vector<std::uint32_t> local_path_;
  std::vector<std::uint32_t> local_flows_;
  std::vector<double> rate_;
  std::vector<std::uint32_t> bottleneck_;

  MaxMinSolver solver_;
  Counters counters_;
};

}  // namespace stepsim::engine
