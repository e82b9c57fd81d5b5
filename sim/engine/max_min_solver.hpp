// Exact max-min fair rates by progressive filling (water-filling), on its own: no simulator, no
// flow bookkeeping, testable alone (as SimGrid keeps its lmm solver apart).
//
// Model. Links l have capacities C_l (bytes/s). A "class" c stands for n_c identical flows that
// cross the same links (its path; a link listed twice counts twice). A flow may load a link with
// a weight w_cl (a sprayed flow puts a share w of its bytes on each link of its paths; 1 when no
// weights are given): at rate r it takes w_cl r of the link. Max-min fairness gives every flow of
// a class the same rate r_c. Progressive filling raises the rate of every unfrozen flow together;
// a link saturates at level x when
//     C_l = sum over frozen classes on l of n_c w_cl r_c  +  x * (sum over unfrozen classes of
//           n_c w_cl),
// i.e. at its fair share (remaining capacity / unfrozen demand). The link with the smallest fair
// share saturates first; its unfrozen classes are frozen at that level and their use is taken off
// every other link they cross. Repeating until every class is frozen gives the unique max-min fair
// allocation (Bertsekas & Gallager, Data Networks, 2nd ed., section 6.5.2).
//
// Cost: O(E log L) for E = sum of path lengths over classes and L links, using an indexed heap of
// the shared links keyed by fair share (a link only one class crosses is a cap on that class). Ties
// between links of equal share are broken by link index, so results never depend on anything but
// the input (nor on how the heap is kept, as long as it yields the smallest (share, link) first).
// A freeze raises the share of most links it touches; the heap keeps the old, lower key of such
// a link (a lower bound) and moves it down only when it comes to the top, so a link touched by
// many freezes is sifted once instead of once per freeze.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sim/engine/indexed_heap.hpp"

namespace stepsim::engine {

// A max-min problem as MaxMinSolver::solve takes it (the spans it documents there).
struct MaxMinProblem {
  std::span<const double> link_capacity;
  std::span<const std::uint32_t> class_flows;
  std::span<const std::uint32_t> path_offsets;
  std::span<const std::uint32_t> path_links;
  std::span<const double> path_weights;
  std::span<const double> class_cap;
  // n_c w_cl of class c on its k-th link (kWeighted false: n_c, the flows counted as before).
  template <bool kWeighted>
  double use(std::size_t c, std::uint32_t k) const {
    const double n = static_cast<double>(class_flows[c]);
    if constexpr (kWeighted) {
      return n * path_weights[k];
    } else {
      return n;
    }
  }
  // Adds class c's load at `rate` per flow (n_c rate, times its weight on each link) to `load`,
  // by link, in path order; returns n_c rate.
  double add_class_load(std::size_t c, double rate, std::span<double> load) const {
    const double class_load = static_cast<double>(class_flows[c]) * rate;
    for (std::uint32_t k = path_offsets[c]; k < path_offsets[c + 1]; ++k)
      load[path_links[k]] += path_weights.empty() ? class_load : class_load * path_weights[k];
    return class_load;
  }
};

class MaxMinSolver {
 public:
  MaxMinSolver() = default;
  // The heap refers to heap_pos_ of its own solver.
  MaxMinSolver(const MaxMinSolver&) = delete;
  MaxMinSolver& operator=(const MaxMinSolver&) = delete;

  // Inputs, indices local to this problem:
  //  - link_capacity[l] >= 0, bytes/s (a link of capacity 0 gives the classes on it rate 0);
  //  - class_flows[c] >= 1, the number of identical flows in class c;
  //  - path_offsets (size classes + 1) and path_links: class c crosses
  //    path_links[path_offsets[c] .. path_offsets[c + 1]), each path non-empty;
  //  - path_weights: empty (every weight 1), or parallel to path_links, each > 0 and finite;
  //  - class_cap: empty (no caps), or per class the most bytes/s each of its flows may take
  //    (> 0; infinity: none), as a link only that flow crosses would allow.
  // Output: rate[c], the max-min fair rate of each flow of class c, bytes/s (size classes).
  // The scratch memory is kept between calls, so a solver reused for many problems does not
  // allocate once it has seen the largest one.
  void solve(std::span<const double> link_capacity, std::span<const std::uint32_t> class_flows,
             std::span<const std::uint32_t> path_offsets, std::span<const std::uint32_t> path_links,
             std::span<const double> path_weights, std::span<const double> class_cap,
             std::span<double> rate) {
    solve({link_capacity, class_flows, path_offsets, path_links, path_weights, class_cap}, rate);
  }
  void solve(const MaxMinProblem& problem, std::span<double> rate);
  // No caps.
  void solve(std::span<const double> link_capacity, std::span<const std::uint32_t> class_flows,
             std::span<const std::uint32_t> path_offsets, std::span<const std::uint32_t> path_links,
             std::span<const double> path_weights, std::span<double> rate) {
    solve(link_capacity, class_flows, path_offsets, path_links, path_weights, {}, rate);
  }
  // Every weight 1.
  void solve(std::span<const double> link_capacity, std::span<const std::uint32_t> class_flows,
             std::span<const std::uint32_t> path_offsets, std::span<const std::uint32_t> path_links,
             std::span<double> rate) {
    solve(link_capacity, class_flows, path_offsets, path_links, {}, rate);
  }
  // As solve() (every weight 1), and also each class's bottleneck: the link whose fair share
  // froze it (bottleneck[c], local index; its rate is that link's level), and the links that
  // froze classes, in the order they did (`order`: nondecreasing level). (The simulator does not
  // need it; the rates-per-level prototype in sim/bench/level_rates.hpp does.)
  void solve_with_bottlenecks(std::span<const double> link_capacity,
                              std::span<const std::uint32_t> class_flows,
                              std::span<const std::uint32_t> path_offsets,
                              std::span<const std::uint32_t> path_links, std::span<double> rate,
                              std::span<std::uint32_t> bottleneck,
                              std::vector<std::uint32_t>& order);

 private:
  static constexpr std::uint32_t kAbsent = 0xffffffffu;
  using Problem = MaxMinProblem;
  struct Cap {
    double share;  // capacity / demand of a link that only this class crosses
    std::uint32_t cls;
    std::uint32_t link;
  };
  struct Entry {
    double key;  // <= share_[link]: the share when the entry was last placed
    std::uint32_t link;
  };

  // Heap order: smaller key first, ties by link index.
  struct Before {
    bool operator()(const Entry& a, const Entry& b) const {
      return a.key < b.key || (a.key == b.key && a.link < b.link);
    }
  };
  struct Position {
    std::vector<std::uint32_t>* heap_pos;
    void operator()(const Entry& e, std::uint32_t pos) const { (*heap_pos)[e.link] = pos; }
  };
  // Each step comes in two forms: kWeighted (some path has weights: the demand of a link is
  // kept as the sum of n_c w_cl) and not (the demand is the count of unfrozen flows, and no
  // weight is read: an unweighted problem costs what it cost before weights existed).
  // The paths transposed into link -> classes, and the per-link sums.
  template <bool kWeighted>
  void transpose(const Problem& problem);
  // Private links become caps on their class, shared ones enter the heap; so do the classes' own
  // caps (class_cap).
  template <bool kWeighted>
  void place_links(std::size_t links, std::span<const double> class_cap);
  // Progressive filling: freezes every class at its rate.
  // kBottlenecks: also write bottleneck_ and *order_ (solve_with_bottlenecks); a separate
  // instantiation, so that solve() runs the instructions it ran without them.
  template <bool kWeighted, bool kBottlenecks = false>
  void fill(const Problem& problem, std::span<double> rate);
  // The unfrozen demand on link l.
  template <bool kWeighted>
  double demand(std::uint32_t l) const {
    if constexpr (kWeighted) {
      return demand_[l];
    } else {
      return static_cast<double>(unfrozen_[l]);
    }
  }
  // Takes the top link out of the heap.
  void pop_top();
  // Steps of fill(): the heap's top brought up to date (its current share, no link without
  // unfrozen flows); the shares of the links the last freezes touched, their keys lowered where
  // rounding put a share below its key.
  [[gnu::always_inline]] inline void settle_top();
  template <bool kWeighted>
  [[gnu::always_inline]] inline void update_touched();

  std::vector<double> remaining_;        // per link: capacity not yet given to frozen flows
  std::vector<std::uint64_t> unfrozen_;  // per link: unfrozen flows crossing it
  std::vector<double> demand_;  // per link: sum of n_c w_cl over unfrozen classes (if weighted)
  std::vector<double> share_;   // per link: remaining / demand
  std::vector<std::uint32_t> heap_pos_;      // per link: position in heap_, kAbsent when not there
  std::vector<std::uint32_t> link_offsets_;  // link -> classes (transpose of the paths)
  std::vector<std::uint32_t> link_classes_;
  std::vector<std::uint32_t> touched_;
  std::vector<std::uint32_t> touched_mark_;
  std::vector<std::uint8_t> frozen_;
  std::vector<Cap> caps_;        // sorted by share
  std::vector<Cap> class_caps_;  // (scratch: the classes' own caps, then merged with the links')
  std::vector<Cap> merged_caps_;
  // solve_with_bottlenecks' outputs while it runs.
  std::span<std::uint32_t> bottleneck_;
  std::vector<std::uint32_t>* order_ = nullptr;
  // The shared links by key (lazy: see the header comment).
  IndexedHeap<Entry, Before, Position> heap_{Position{&heap_pos_}};
};

}  // namespace stepsim::engine
