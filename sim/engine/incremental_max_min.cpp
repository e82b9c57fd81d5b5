#include "sim/engine/incremental_max_min.hpp"

#include <algorithm>
#include <cmath>

namespace stepsim::engine::detail {

namespace {

// Classes whose rate is below the smallest departed rate by more than this (relative) keep their
// rates without a re-solve (IncrementalMaxMin::solve()).
constexpr double kFixedRateMargin = 1e-9;

}  // namespace

IncrementalMaxMin::Component IncrementalMaxMin::solve() {
  const double fixed_below = this->fixed_below();
  arrival_instant_ = !arrivals_.empty();
  arrivals_.clear();
  instant_min_departed_rate_ = std::numeric_limits<double>::infinity();
  if (changed_.empty()) return {};
  ++counters_.solves;
  // Every part of the component holds a link of a changed class (the search starts there): with
  // one changed class, a few parts at most and seldom twins, not looked for (BM_AllToAll's
  // departures: one component of 16k classes).
  twins_ =
      (strategy_ == SolveStrategy::kIncremental || strategy_ == SolveStrategy::kSummedBoundary) &&
      changed_.size() >= 2;
  start_search();
  if (strategy_ == SolveStrategy::kFullResolve) {
    search_everything();
  } else {
    search_changes(fixed_below);
  }
  for (;;) {
    scan(fixed_below);
    solve_local();
    if (!grow_boundary()) break;
  }
  return {comp_classes_, problem_.rate, comp_links_};
}

double IncrementalMaxMin::fixed_below() const {
  // Which classes keep their rates. Progressive filling freezes flows in increasing order of rate.
  // When flows only leave (no arrival this instant), let r be the smallest rate of a departed flow.
  // Below level r the departed flows were still unfrozen in the old filling, so no link they
  // cross saturated below r (it would have frozen them there); removing them only lowers the load
  // of such links at every level. The links that saturated below r carry no departed flow and see
  // the same frozen set at each level, so they saturate at the same levels again: every class with
  // a rate below r keeps it exactly. Those classes are fixed (their load is taken off the link
  // capacities) and only the classes at r or above are re-solved, which is the same progressive
  // filling from level r on. A relative margin keeps classes that floating point puts a hair below
  // r in the re-solved set.
  //
  // Arrivals. Let x be the smallest new rate of a flow that arrived this instant. Below level x the
  // new filling is the old one: a link the old filling saturated below x carries no arrival (the
  // extra demand would saturate it no later, freezing the arrival below x) and no departed flow
  // (above), so it saturates at the same level with the same frozen set; and a link that did not
  // saturate below x before cannot now (if it carries an arrival, the arrival would freeze there
  // below x; if not, its demand is no larger than before). So the classes below min(r, x) keep
  // their rates. x is not known before the solve, but a lower bound serves: a flow's max-min rate
  // is at least min over its links of C_l / n_l, n_l the flows on link l (it has the largest rate
  // on its bottleneck link, which is full: C_l = sum of r <= n_l r_f, a link listed twice in a path
  // counted twice in both). Sprayed flows load links by shares, which n_l does not bound: while
  // any is active, an arrival fixes nothing.
  double bound = instant_min_departed_rate_;
  if (!arrivals_.empty() && tables_.sprayed_flows > 0) bound = 0.0;
  for (const std::uint32_t cls : arrivals_) {
    bound = std::min(bound, tables_.rate_cap(cls));  // (a cap is a private link's C_l / 1)
    const std::span<const std::uint32_t> links = tables_.path(cls);
    for (const std::uint32_t l : links) {
      const std::uint32_t n = tables_.link_flows[l];
      bound = std::min(bound, n == 0 ? 0.0 : tables_.link_capacity[l] / static_cast<double>(n));
    }
  }
  const bool full = strategy_ == SolveStrategy::kFullResolve;
  return (full || !std::isfinite(bound) || !(bound > 0.0)) ? 0.0 : bound * (1.0 - kFixedRateMargin);
}

void IncrementalMaxMin::start_search() {
  ++stamp_;
  comp_links_.clear();
  comp_classes_.clear();
  scan_queue_.clear();
  // The component's classes as a problem with local indices, built as the search finds them (a
  // class's links are visited, so numbered, before its path is written).
  problem_.clear();
  labels_.clear();
  part_link_begin_.clear();
  part_class_begin_.clear();
  in_turn_ = false;
}

void IncrementalMaxMin::search_everything() {
  // (No twins are looked for: one label.)
  labels_.add();
  for (std::uint32_t l = 0; l < tables_.link_capacity.size(); ++l)
    visit_link(l, true, 0);
}

void IncrementalMaxMin::search_changes(double fixed_below) {
  // A label per changed class's link (a changed class that left joins nothing; the classes the
  // search finds join the links they cross). While no sprayed flow is active the search takes the
  // parts one at a time: from a changed class's link it runs to its end before the next link
  // starts one, so each part's links and classes come together (a changed class's links are
  // flagged, to be crossed wherever the search meets them). Else every changed class's link is
  // visited first, and the search goes breadth first from all of them.
  in_turn_ = tables_.sprayed_flows == 0;
  if (in_turn_) {
    for (const std::uint32_t d : changed_) {
      for (const std::uint32_t l : tables_.path(d))
        link_seed_[l] = stamp_;
    }
  }
  for (const std::uint32_t d : changed_) {
    for (const std::uint32_t l : tables_.path(d)) {
      if (link_mark_[l] == stamp_) continue;
      const std::uint32_t label = labels_.add();
      if (in_turn_) {
        part_link_begin_.push_back(static_cast<std::uint32_t>(comp_links_.size()));
        part_class_begin_.push_back(static_cast<std::uint32_t>(comp_classes_.size()));
      }
      visit_link(l, true, label);
      if (in_turn_) scan(fixed_below);
    }
  }
}

void IncrementalMaxMin::visit_link(std::uint32_t l, bool cross, std::uint32_t label) {
  if (link_mark_[l] != stamp_) {
    link_mark_[l] = stamp_;
    const std::size_t j = comp_links_.size();
    link_local_[l] = static_cast<std::uint32_t>(j);
    comp_links_.push_back(l);
    if (j == link_label_.size()) grow_link_fields();
    link_label_[j] = label;
    crossed_[j] = cross ? 1 : 0;
    estimated_[j] = !cross && bounds_boundary_ ? 1 : 0;
    if (!cross && bounds_boundary_) ++counters_.boundary_estimates;
    fixed_load_[j] = 0.0;
    fixed_count_[j] = 0;
    inside_load_[j] = 0.0;
    inside_count_[j] = 0;
    if (cross) scan_queue_.push_back(l);
  }
}

std::uint32_t IncrementalMaxMin::path_link(std::uint32_t l, std::uint32_t label, bool twins,
                                           const std::uint32_t* mark, const std::uint32_t* local_of,
                                           std::uint32_t stamp) {
  // (Most links are met again; the saturation test is only for the first meeting.)
  if (mark[l] != stamp) {
    visit_link(l,
               link_seed_[l] == stamp || saturated(tables_.link_load[l], tables_.link_capacity[l]),
               label);
    return local_of[l];
  }
  const std::uint32_t local = local_of[l];
  if (twins && link_label_[local] != label) labels_.join(label, link_label_[local]);
  return local;
}

void IncrementalMaxMin::grow_link_fields() {
  const std::size_t n = std::max<std::size_t>(64, 2 * link_label_.size());
  link_label_.resize(n);
  crossed_.resize(n);
  estimated_.resize(n);
  fixed_load_.resize(n);
  fixed_count_.resize(n);
  inside_load_.resize(n);
  inside_count_.resize(n);
}

void IncrementalMaxMin::scan(double fixed_below) {
  const bool twins = twins_;
  for (std::size_t q = 0; q < scan_queue_.size(); ++q) {
    const std::uint32_t j = link_local_[scan_queue_[q]];
    const std::uint32_t label = twins ? labels_.find(link_label_[j]) : 0;
    // (Read once: the lists' and the classes' storage do not move during the search, and the
    // stores below may alias the vectors' pointers for the compiler.)
    const std::uint32_t* const on_link = tables_.link_classes[scan_queue_[q]].data();
    const std::size_t listed = tables_.link_classes[scan_queue_[q]].size();
    const double* const shares_on_link = tables_.link_shares[scan_queue_[q]].data();
    ClassHot* const hot = tables_.hot.data();
    const std::uint32_t* const mark = link_mark_.data();
    const std::uint32_t* const local_of = link_local_.data();
    const std::uint32_t stamp = stamp_;
    for (std::size_t k = 0; k < listed; ++k) {
      if (k + kPrefetchAhead < listed) prefetch(&hot[on_link[k + kPrefetchAhead]]);
      const std::uint32_t cls = on_link[k];
      ClassHot& c = hot[cls];
      if (c.mark == stamp) continue;
      if (c.rate > 0.0 && c.rate < fixed_below) {  // the only classes a crossed link leaves out
        fixed_load_[j] += static_cast<double>(c.flows) * c.rate * shares_on_link[k];
        fixed_count_[j] += c.flows;
        if (arrival_instant_) ++counters_.kept_at_arrivals;  // (once per crossed link it is on)
        continue;
      }
      c.mark = stamp;
      comp_classes_.push_back(cls);
      problem_.flows.push_back(c.flows);
      if (FlowTables::capped(c)) {
        problem_.add_cap(tables_.rate_cap(cls));
      } else if (problem_.capped) {
        problem_.cap.push_back(kNoCap);
      }
      if (FlowTables::sprayed(c) && !problem_.weighted) problem_.start_weights();
      const std::span<const std::uint32_t> links = tables_.path(cls);
      const std::uint32_t flows = c.flows;
      const double class_load = static_cast<double>(flows) * c.rate;
      if (!problem_.weighted) {  // (as below, with every share 1: no shares read or kept)
        for (const std::uint32_t l : links) {
          const std::uint32_t local = path_link(l, label, twins, mark, local_of, stamp);
          problem_.path.push_back(local);
          inside_load_[local] += class_load;
          inside_count_[local] += flows;
        }
        problem_.end_class();
        continue;
      }
      // (Read once: the stores below may alias the class's fields for the compiler.)
      const double* shares = FlowTables::sprayed(c) ? tables_.classes[cls].shares.data() : nullptr;
      for (std::size_t i = 0; i < links.size(); ++i) {
        const std::uint32_t local = path_link(links[i], label, twins, mark, local_of, stamp);
        problem_.path.push_back(local);
        const double share = shares != nullptr ? shares[i] : 1.0;
        problem_.weight.push_back(share);
        inside_load_[local] += class_load * share;  // (at the old rate, for estimate_boundary)
        inside_count_[local] += flows;
      }
      problem_.end_class();
    }
  }
  scan_queue_.clear();
}

void IncrementalMaxMin::solve_local() {
  set_capacities();
  const std::size_t nc = comp_classes_.size();
  problem_.rate.resize(nc);
  counters_.classes_solved += nc;
  const MaxMinProblem problem = problem_.view();
  if (!twins_) {
    solver_.solve(problem, problem_.rate);
  } else if (in_turn_ && labels_.all_apart()) {
    // (The parts are still runs when the search took them one at a time and no class met two.)
    twin_parts_.solve_ranges(solver_, problem, problem_.rate, part_link_begin_, part_class_begin_);
  } else {
    const std::uint32_t parts = labels_.number_parts(
        std::span<const std::uint32_t>(link_label_).first(comp_links_.size()), part_of_link_);
    twin_parts_.solve(solver_, problem, problem_.rate, part_of_link_, parts);
  }
}

void IncrementalMaxMin::set_capacities() {
  // Each link's capacity less the load of the classes outside the component: the fixed ones on
  // crossed links (summed by the search), any on boundary links (summed here, again after each
  // growth of the component; bounded instead for an estimated one, which has no limit).
  const std::size_t nl = comp_links_.size();
  std::vector<double>& capacity = problem_.capacity;
  capacity.resize(nl);
  if (bounds_boundary_) estimate_boundary();
  for (std::size_t j = 0; j < nl; ++j) {
    if (estimated_[j] != 0) {
      capacity[j] = std::numeric_limits<double>::infinity();
      continue;
    }
    if (crossed_[j] == 0) {
      fixed_load_[j] = 0.0;
      fixed_count_[j] = 0;
      const std::vector<std::uint32_t>& on_link = tables_.link_classes[comp_links_[j]];
      const std::vector<double>& shares_on_link = tables_.link_shares[comp_links_[j]];
      for (std::size_t k = 0; k < on_link.size(); ++k) {
        if (k + kPrefetchAhead < on_link.size())
          prefetch(&tables_.hot[on_link[k + kPrefetchAhead]]);
        const ClassHot& c = tables_.hot[on_link[k]];
        if (c.mark == stamp_) continue;
        fixed_load_[j] += static_cast<double>(c.flows) * c.rate * shares_on_link[k];
        fixed_count_[j] += c.flows;
      }
    }
    capacity[j] = std::max(tables_.link_capacity[comp_links_[j]] - fixed_load_[j], 0.0);
  }
}

void IncrementalMaxMin::estimate_boundary() {
  // Outside load = link_load - link_unsolved (flows that left, less flows that joined at their
  // class's old rate) - (component classes at their flows now and their old rates, summed by the
  // search), up to rounding: the classes outside kept their flows and rates since the link's
  // last solve, which set link_load; every class whose flows changed since is in the component,
  // or has none left (its load is in link_unsolved).
  for (std::size_t j = 0; j < comp_links_.size(); ++j) {
    if (estimated_[j] == 0) continue;
    const std::uint32_t l = comp_links_[j];
    fixed_load_[j] =
        std::max(tables_.link_load[l] - tables_.link_unsolved[l] - inside_load_[j], 0.0);
    fixed_count_[j] = tables_.link_flows[l] - inside_count_[j];
  }
}

bool IncrementalMaxMin::grow_boundary() {
  const std::size_t nl = comp_links_.size();
  const std::size_t nc = comp_classes_.size();
  load_.assign(fixed_load_.begin(), fixed_load_.begin() + static_cast<std::ptrdiff_t>(nl));
  bool finite = true;
  // (With twin parts, each first part's classes summed and copied to its twins: the same bits.)
  const MaxMinProblem problem = problem_.view();
  const std::span<const double> rate = problem_.rate;
  if (!twins_ || !twin_parts_.sum_loads(problem, rate, load_, finite)) {
    for (std::size_t i = 0; i < nc; ++i)
      finite = std::isfinite(problem.add_class_load(i, rate[i], load_)) && finite;
  }
  // An estimated link that the rates bring within twice the saturation margin (or rates without
  // a limit: never expected, as every class crosses a crossed link) is summed exactly, and the
  // solve repeated before any link is crossed: a round with a refused estimate decides nothing
  // else, so the links crossed are those the exact sums alone would cross.
  bool refused = false;
  for (std::size_t j = 0; j < nl; ++j) {
    if (estimated_[j] == 0) continue;
    const double capacity = tables_.link_capacity[comp_links_[j]];
    if (!finite || load_[j] >= capacity * (1.0 - 2.0 * kSaturatedMargin)) {
      estimated_[j] = 0;
      refused = true;
      ++counters_.boundary_estimates_refused;
    }
  }
  if (refused) return true;
  for (std::size_t j = 0; j < nl; ++j) {
    if (crossed_[j] != 0 || estimated_[j] != 0) continue;
    const std::uint32_t l = comp_links_[j];
    if (saturated(load_[j], tables_.link_capacity[l])) {
      crossed_[j] = 1;
      fixed_load_[j] = 0.0;  // the search sums its fixed classes when it crosses it
      fixed_count_[j] = 0;
      scan_queue_.push_back(l);
    }
  }
  if (scan_queue_.empty()) return false;
  in_turn_ = false;  // (the classes found from here on join any part)
  ++counters_.boundary_expansions;
  return true;
}

}  // namespace stepsim::engine::detail
