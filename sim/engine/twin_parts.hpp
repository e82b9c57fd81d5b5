// Internal to the flow network: a max-min problem solved once per distinct connected part.
//
// The replicas of a training step do the same thing at the same instant: at the end of an
// expert-parallel all-to-all, the eight GPUs of every node in every pipeline stage forward their
// tokens over NVLink in the same pattern, with the same sizes, and their flows finish together.
// The incremental solve then hands the solver one component that is many disconnected parts (40
// on the 384-GPU DeepSeek-V3 example), most of them equal: the same capacities, flows, caps and
// weights on paths of the same shape. Progressive filling on disconnected parts is filling on
// each, so the rates of one part are those of any part equal to it.
//
// Parts. Two classes are in one part when their paths share a link; the caller gives the parts
// (the incremental solve's search labels them as it finds the component, or finds them in runs
// when it takes them one at a time: solve_ranges). A part is
// its links in increasing (local) index and its classes in increasing index; two parts are twins
// when, listed so, they have the same number of links and classes, the same link capacities and
// the same classes: flows, cap, path length, and path links and weights position for position
// (links named by their rank in the part). Every value is compared bit for bit. Candidates are
// the parts of one signature (sizes, first link's capacity, first class's flows and path
// length), each compared with at most four first parts of it: a twin missed is solved, which
// costs time, not exactness.
//
// Exactness. The problem solved is the union of one part of each twin set (the first, by index),
// its links and classes in their order in the whole problem, so the solver breaks its ties
// (links by index, caps by class) between them as it would have in the whole problem. A twin
// takes the rates of its first part class by class. Progressive filling runs each part's shares
// in increasing order, and a twin's shares are the same numbers at the same points of its own
// filling, so the level it reaches when it freezes a class is the same: the rates are those of
// the whole problem's solve, bit for bit (tests/engine/twin_parts_test.cpp checks this on random
// problems, and every golden summary stays byte for byte).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sim/engine/max_min_solver.hpp"

namespace stepsim::engine::detail {

class TwinParts {
 public:
  // As MaxMinSolver::solve (its inputs, local indices), with `solver` doing the filling, and the
  // parts given: part_of_link[l] for each link, numbered 0 .. parts - 1 by their smallest link,
  // every link of a class in one part (the incremental solve's search labels them).
  void solve(MaxMinSolver& solver, const MaxMinProblem& problem, std::span<double> rate,
             std::span<const std::uint32_t> part_of_link, std::uint32_t parts);
  // The same when each part's links and classes come together (the search took the parts one at
  // a time): part p's links begin at link_begin[p] and its classes at class_begin[p] (the last
  // part's run to the end), link_begin increasing from 0, class_begin nondecreasing from 0, every
  // class's links in its part. Nothing is listed; the rates are the same bits as solve()'s.
  void solve_ranges(MaxMinSolver& solver, const MaxMinProblem& problem, std::span<double> rate,
                    std::span<const std::uint32_t> link_begin,
                    std::span<const std::uint32_t> class_begin);

  // After solve(): the links' loads under `rate` when that solve found twins, else false (and
  // `load` unchanged). `load` holds each link's outside load on entry, which must be the same bit
  // for bit on a twin part's links as on its first part's (else false). Each first part's classes
  // are summed in increasing index and each twin part's links take their first part's sums: the
  // same terms in the same order, so the same bits as a sum over every class in index order.
  // `finite` is false when a class's load is not.
  bool sum_loads(const MaxMinProblem& in, std::span<const double> rate, std::span<double> load,
                 bool& finite) const;

  // Work measures: classes whose rates were copied from a twin part (not solved).
  std::uint64_t twin_classes() const { return twin_classes_; }

 private:
  static constexpr std::uint32_t kNone = 0xffffffffu;
  // Lists each part's links and classes (part_of_ names each link's part).
  void list_parts(const MaxMinProblem& in, std::uint32_t parts);
  // Finds the twins and solves (after list_parts).
  void solve_parts(MaxMinSolver& solver, const MaxMinProblem& in, std::uint32_t parts,
                   std::span<double> rate);
  std::uint64_t signature(const MaxMinProblem& in, std::uint32_t part) const;
  // Calls f(twin, first) for each link of a twin part of the last solve that found twins and the
  // link at its rank in the first part.
  template <class F>
  void for_each_twin_link(F f) const {
    for (std::uint32_t p = 0; p < twin_set_parts_; ++p) {
      const std::uint32_t q = first_[p];
      if (q == p) continue;
      for (std::uint32_t k = 0; k < link_offsets_[p + 1] - link_offsets_[p]; ++k)
        f(link_at(p, k), link_at(q, k));
    }
  }
  // The k-th link and class of part p.
  std::uint32_t link_at(std::uint32_t p, std::uint32_t k) const {
    return ranges_ ? link_offsets_[p] + k : link_order_[link_offsets_[p] + k];
  }
  std::uint32_t class_at(std::uint32_t p, std::uint32_t k) const {
    return ranges_ ? class_offsets_[p] + k : class_order_[class_offsets_[p] + k];
  }
  bool equal(const MaxMinProblem& in, std::uint32_t a, std::uint32_t b) const;
  bool equal_runs(const MaxMinProblem& in, std::uint32_t a, std::uint32_t b) const;
  // The problem of the first parts (after the twins are found), solved, and the rates given out.
  void solve_first_parts(MaxMinSolver& solver, const MaxMinProblem& in, std::uint32_t parts,
                         std::span<double> rate);
  void solve_first_runs(MaxMinSolver& solver, const MaxMinProblem& in, std::uint32_t parts,
                        std::span<double> rate);
  // The first parts' problem's classes: emptied, and class c appended (its links mapped).
  void clear_first_classes();
  template <class LinkMap>
  void append_first_class(const MaxMinProblem& in, std::uint32_t c, LinkMap link_map);

  std::span<const std::uint32_t> part_of_;  // per link: its part (as given to solve)
  bool ranges_ = false;  // the parts are runs of links and classes (solve_ranges): not listed
  std::vector<std::uint32_t> rank_;          // per link: its position among its part's links
  std::vector<std::uint32_t> link_offsets_;  // per part: its links, in link_order_
  std::vector<std::uint32_t> link_order_;
  std::vector<std::uint32_t> class_part_;     // per class: its part
  std::vector<std::uint32_t> class_offsets_;  // per part: its classes, in class_order_
  std::vector<std::uint32_t> class_order_;
  std::vector<std::uint32_t> first_;  // per part: the first part of its twin set (itself if none)
  std::uint32_t twin_set_parts_ = 0;  // the parts of the last solve when it found twins, else 0
  std::vector<std::pair<std::uint64_t, std::uint32_t>> by_signature_;
  std::vector<std::uint32_t> candidates_;
  // The problem of the first parts, and its rates.
  std::vector<std::uint32_t> reduced_link_;  // per link of a first part: its index there
  std::vector<double> r_capacity_;
  std::vector<std::uint32_t> r_flows_;
  std::vector<std::uint32_t> r_offsets_;
  std::vector<std::uint32_t> r_links_;
  std::vector<double> r_weights_;
  std::vector<double> r_cap_;
  std::vector<double> r_rate_;
  std::uint64_t twin_classes_ = 0;
};

}  // namespace stepsim::engine::detail
