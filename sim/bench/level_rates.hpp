// A prototype kept to measure against (bench_engine BM_AllToAllLevels; not part of the engine):
// exact max-min rates held per bottleneck level, for flows that all start
// at time 0 and drain to completion (the all-to-all of BM_AllToAll). FlowNetwork does not use it;
// it measures what holding rates per level saves against the per-class solve, and is checked
// against FlowNetwork's completion times (tests/engine/level_rates_test.cpp: within 1 ps on random
// instances; BM_AllToAllLevelsError: equal at 64 and 128 endpoints, within 2 ps at 256).
//
// Model. As FlowNetwork's (flow_network.hpp): links with capacities and latencies, flows on paths
// (each link at most once per path, one path per flow), max-min fair rates re-solved at the end of
// every instant with departures, drain ends rounded up to the picosecond with the same slack,
// finish = drain end + the path's latency. Flows on one path are one class.
//
// Levels. In a max-min allocation every class c has a bottleneck b(c), the link whose fair share
// froze it in progressive filling, and its rate is that link's level x_b(c). The classes frozen at
// one link are its group: they share the rate, so the group keeps one clock V_l (bytes drained per
// flow since an arbitrary origin) and each flow a target on its group's clock. A level change is
// one update of the group's clock, not one per flow; a class that changes group has its flows'
// targets moved to the new clock. Each group keeps a heap of its flows' targets, and a heap of the
// groups by the picosecond their first flow drains gives the next instant.
//
// Solving. An instant with departures re-solves by progressive filling over the links, from the
// smallest level a flow departed at (the groups below keep their levels exactly: the departure
// pruning of IncrementalMaxMin::solve). The classes in play are the members of the groups at or
// above it; their load at the old levels comes off their links, and the links are filled in order
// of fair share. A link that saturates freezes its old group's members that are still unfrozen,
// and reads its list of classes only when other classes in play cross it (its unfrozen flows are
// more than its members'). The solve still visits every class in play (about as many as the
// per-class solve re-solves), but nothing per class when its group is unchanged.
//
// Tried first and not kept: the levels updated as a triangular system in the old order
// (x_l = (C_l - F_l) / N_l, F_l the load of the classes on l frozen at earlier links), checked
// (levels nondecreasing along the order, no other link over capacity) and re-solved when the
// check failed. On the uneven all-to-all of 64 endpoints the check failed at 3,708 of 4,032
// instants: a departure moves about 15 classes to another bottleneck
// (the commit that moved this prototype out of the engine, and docs/performance.md at c635544,
// "Rates held per bottleneck level", give the figures and why the cost stays Theta(flows^2)).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <utility>
#include <vector>

#include "sim/engine/indexed_heap.hpp"
#include "sim/engine/max_min_solver.hpp"

namespace stepsim::bench {

class LevelRates {
 public:
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
    std::uint64_t instants = 0;         // instants with departures
    std::uint64_t full_solves = 0;      // MaxMinSolver over every class (the first solve)
    std::uint64_t classes_solved = 0;   // classes in the full solves
    std::uint64_t partial_solves = 0;   // progressive fillings from a departed level (above)
    std::uint64_t classes_in_play = 0;  // classes they re-solved
    std::uint64_t groups_in_play = 0;   // groups they re-solved
    std::uint64_t level_updates = 0;    // group levels changed (clock updates)
    std::uint64_t class_moves = 0;      // classes that changed group (their flows rebased)
    std::uint64_t link_scans = 0;       // classes read in link lists (beyond group members)
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
    const ClassHot& h = hot_[cls];
    if (h.path_size <= kInlinePath) return {h.path, h.path_size};
    return {path_.data() + path_offset_[cls], h.path_size};
  }
  void settle(std::uint32_t link, std::int64_t now_ps);
  // The first live target of the group (stale entries dropped), or nullptr.
  const Target* first_target(std::uint32_t link);
  void update_end(std::uint32_t link);
  // The flow (just taken off its group's heap) finishes now.
  void depart(std::uint32_t flow, std::int64_t now_ps);
  void full_solve(std::int64_t now_ps);
  // Progressive filling of the groups at or above the smallest departed level only, frozen by
  // links, with the old groups as hints; exact max-min.
  void partial_solve(std::int64_t now_ps);
  // Its steps: the classes in play (groups from order_[first] on) taken off their links, the
  // progressive filling over the links they touched, each saturating link `k` freezing its
  // classes at `level` as a new group, and the order rebuilt from the new groups.
  void take_in_play(std::size_t first, std::int64_t now_ps);
  void touch(std::uint32_t link);  // a link of the partial solve, its scratch set on first touch
  void refill(std::size_t first, std::int64_t now_ps);
  void saturate(std::uint32_t k, double level, std::int64_t now_ps);
  void reorder(std::size_t first);
  // Freezes class `cls` (crossing link `at`) at `level` in the partial solve.
  void freeze(std::uint32_t cls, std::uint32_t at, double level);
  void move_class(std::uint32_t cls, std::uint32_t to);

  // Links.
  std::vector<double> capacity_;
  std::vector<std::int64_t> latency_ps_;
  std::vector<std::uint32_t> group_flows_;           // N_l (0: ungrouped)
  std::vector<double> level_;                        // x_l (0 when ungrouped)
  std::vector<double> clock_;                        // V_l
  std::vector<std::int64_t> clock_ps_;               // time V_l is settled to
  std::vector<std::vector<std::uint32_t>> members_;  // classes of the group
  std::vector<std::vector<Target>> targets_;         // min-heap per group, lazily cleaned
  std::vector<std::uint32_t> order_pos_;             // position in order_, kNone: ungrouped
  std::vector<std::uint32_t> order_;                 // pi: grouped links by level
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
  engine::IndexedHeap<ShareEntry, SmallerShare, SharePosition> shares_{SharePosition{&heap_pos_}};
  std::uint32_t stamp_ = 0;
  std::vector<std::uint32_t> new_order_;
  std::vector<std::uint32_t> new_members_;
  engine::IndexedHeap<GroupEnd, EndsFirst, EndPosition> ends_{EndPosition{&end_pos_}};

  // Classes.
  std::vector<std::uint32_t> path_offset_{0};
  std::vector<std::uint32_t> path_;
  std::vector<std::int64_t> class_latency_ps_;
  // What the solve reads for every class in play, in one cache line: the path inline up to
  // kInlinePath links (every path is in path_ as well).
  static constexpr std::uint32_t kInlinePath = 10;
  struct alignas(64) ClassHot {
    std::uint32_t flows = 0;           // n_c
    std::uint32_t group = kNone;       // b(c)
    std::uint32_t member_pos = kNone;  // position in members_[b(c)]
    std::uint32_t in_play = 0;         // stamp of the partial solve that has it in play
    std::uint32_t frozen = 0;          // stamp of the partial solve that froze it
    std::uint32_t path_size = 0;
    std::uint32_t path[kInlinePath] = {};
  };
  static_assert(sizeof(ClassHot) == 64);
  std::vector<ClassHot> hot_;
  std::vector<std::vector<std::uint32_t>> class_flow_list_;  // its draining flows
  std::map<std::vector<std::uint32_t>, std::uint32_t> class_of_path_;

  // Flows.
  std::vector<std::uint32_t> flow_class_;
  std::vector<double> target_;  // on the clock of its class's group
  std::vector<char> done_;
  std::vector<std::int64_t> finish_ps_;

  // Scratch.
  std::vector<std::uint32_t> active_;
  std::vector<std::uint32_t> offsets_;
  std::vector<std::uint32_t> local_path_;
  std::vector<std::uint32_t> local_flows_;
  std::vector<double> rate_;
  std::vector<std::uint32_t> bottleneck_;

  engine::MaxMinSolver solver_;
  Counters counters_;
};

}  // namespace stepsim::bench
