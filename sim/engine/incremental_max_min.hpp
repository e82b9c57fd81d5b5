// Internal to the flow network: the incremental max-min solve over the flow tables. It keeps the
// set of classes changed since the last solve (flows joined or left them) and, when asked, finds
// the component of links and classes those changes can reach, solves it exactly (MaxMinSolver) and
// hands back the component with its new rates (bytes/s per flow); applying them is the caller's.
//
// The component. Max-min rates couple flows only through saturated links: a flow's rate is set by
// a saturated link where it has the largest rate (its bottleneck). So the search goes from the
// changed classes' links through the saturated links only (as of the last solve): link -> its
// active classes -> their links. A link the search reaches but does not cross (it had spare
// capacity) joins the problem as a boundary link, with the capacity that the classes outside the
// component leave on it. After the solve, a boundary link that the new rates fill joins the search
// (its classes may now be bottlenecked by component classes) and the solve is repeated; when none
// fills, every class outside keeps its rate exactly (its bottleneck link holds no component class,
// and no link it crosses went over capacity) and the component's rates are max-min fair given them.
//
// Parts in turn. A component is often many disconnected parts (the replicas of a training step
// doing the same thing at the same instant). While no sprayed flow is active, the search takes
// them one at a time: from a changed class's link it runs to the end of that link's part before
// the next changed link starts another, crossing every changed class's link wherever it meets it.
// Each part's links and classes then come together, in runs, and the twin parts (twin_parts.hpp)
// are found without listing them. (With sprayed flows the search goes breadth first from every
// changed link at once, and the parts are listed.)
//
// Estimated boundary links. Summing what the classes outside leave on a boundary link reads every
// class on it, often many more than the component holds (a fabric link of an all-to-all). The
// classes outside have the rates and flows they had at the link's last solve (a class whose
// flows changed is in the component), so their load is link_load less what changed since
// (FlowTables::link_unsolved) less the component's classes at their current flows and old
// rates, up to rounding. A boundary link first takes part with no limit (its
// capacity is not needed when it does not bind) and that bound as its outside load; if the rates
// leave it below the saturation margin even so, it did not bind (progressive filling never
// reached its share) and the rates are exactly those its exact capacity gives. Otherwise its
// exact sum is taken and the solve repeated. Its load afterwards is the bound plus the
// component's new load (equal to the exact sum up to rounding).
//
// Fixed classes. The classes with rates below the smallest departed rate of the instant, and below
// a lower bound on the new rate of every flow that arrived in it, keep their rates exactly and are
// left out of the component (see solve() in the .cpp for why).
//
// Strategies (solve_strategy.hpp), chosen once at construction: the simulator's takes every
// shortcut above; the references leave out the boundary bound, the twin parts, or the component
// itself (every link and class at every solve), to check the shortcuts against.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "sim/engine/component_problem.hpp"
#include "sim/engine/flow_tables.hpp"
#include "sim/engine/max_min_solver.hpp"
#include "sim/engine/part_labels.hpp"
#include "sim/engine/solve_strategy.hpp"
#include "sim/engine/twin_parts.hpp"

namespace stepsim::engine::detail {

class IncrementalMaxMin {
 public:
  // Reads and marks `tables` (which must outlive it): the classes' `mark` and `dirty` fields.
  // `unsolved_kept`: the owner keeps FlowTables::link_unsolved (the flow network does without
  // idle_tolerance); without it no boundary link is bounded, whatever the strategy.
  IncrementalMaxMin(FlowTables& tables, SolveStrategy strategy, bool unsolved_kept)
      : tables_(tables),
        strategy_(strategy),
        bounds_boundary_(unsolved_kept && (strategy == SolveStrategy::kIncremental ||
                                           strategy == SolveStrategy::kWholeComponent)) {}
  IncrementalMaxMin(const IncrementalMaxMin&) = delete;
  IncrementalMaxMin& operator=(const IncrementalMaxMin&) = delete;

  // A new link (indices follow FlowTables).
  void add_link() {
    link_mark_.push_back(0);
    link_local_.push_back(0);
    link_seed_.push_back(0);
  }

  // Records a change of class `cls` for the next solve; true when it was not yet recorded.
  bool mark_changed(std::uint32_t cls) {
    FlowClass& c = tables_.classes[cls];
    if (c.dirty) return false;
    c.dirty = true;
    changed_.push_back(cls);
    return true;
  }
  bool has_changes() const { return !changed_.empty(); }
  // What the changes of this instant were: a flow arrived in class `cls`, or flows at `rate`
  // drained. They decide which classes keep their rates.
  void note_arrival(std::uint32_t cls) { arrivals_.push_back(cls); }
  void note_departure(double rate) {
    instant_min_departed_rate_ = std::min(instant_min_departed_rate_, rate);
  }

  // The component solved: its classes with their new rates, and its links.
  struct Component {
    std::span<const std::uint32_t> classes;
    std::span<const double> rates;  // parallel to classes
    std::span<const std::uint32_t> links;
  };
  // Solves the component of the changes recorded (everything under SolveStrategy::kFullResolve);
  // empty when nothing changed. Forgets the instant's arrival and departures. The changed classes
  // stay listed (changed()) until forget_changes(). The spans are valid until the next call.
  Component solve();
  std::span<const std::uint32_t> changed() const { return changed_; }
  void forget_changes() {
    for (const std::uint32_t cls : changed_)
      tables_.classes[cls].dirty = false;
    changed_.clear();
  }

  // The component links' loads and flow counts under the rates applied: begin_loads(), then
  // add_class_load() for each class i of the component (in order) with its flows and applied
  // rate, then load(j) and flows(j) for the j-th component link.
  void begin_loads() {
    const auto nl = static_cast<std::ptrdiff_t>(comp_links_.size());
    load_.assign(fixed_load_.begin(), fixed_load_.begin() + nl);
    count_.assign(fixed_count_.begin(), fixed_count_.begin() + nl);
  }
  void add_class_load(std::size_t i, std::uint32_t flows, double rate) {
    const double class_load = static_cast<double>(flows) * rate;
    for (std::uint32_t k = problem_.offsets[i]; k < problem_.offsets[i + 1]; ++k) {
      const std::uint32_t j = problem_.path[k];
      load_[j] += problem_.weighted ? class_load * problem_.weight[k] : class_load;
      count_[j] += flows;
    }
  }
  // Or, when every class of the component took the rate the solve found for it (bit for bit):
  // the loads the solve's last round summed under those rates (the same sums in the same order).
  void use_solved_loads() {
    count_.resize(comp_links_.size());
    for (std::size_t j = 0; j < count_.size(); ++j)
      count_[j] = fixed_count_[j] + inside_count_[j];
  }
  double load(std::size_t j) const { return load_[j]; }
  std::uint32_t flows(std::size_t j) const { return count_[j]; }

  // Work measures: solves run, classes they covered, solves repeated because a boundary link
  // filled up.
  std::uint64_t solves() const { return counters_.solves; }
  std::uint64_t classes_solved() const { return counters_.classes_solved; }
  std::uint64_t boundary_expansions() const { return counters_.boundary_expansions; }
  // Classes whose rates a twin part gave (twin_parts.hpp).
  std::uint64_t twin_classes() const { return twin_parts_.twin_classes(); }
  // Boundary links that took part with the bound on their outside load, and those of them that
  // came near saturation and were summed exactly after all.
  std::uint64_t boundary_estimates() const { return counters_.boundary_estimates; }
  std::uint64_t boundary_estimates_refused() const { return counters_.boundary_estimates_refused; }
  // Classes left out of solves with an arrival (their rates below the arrivals' bound), counted
  // on each crossed link they are on.
  std::uint64_t kept_at_arrivals() const { return counters_.kept_at_arrivals; }

 private:
  // The rate below which a class keeps its rate without a re-solve this instant (0: none does).
  double fixed_below() const;
  // The search's start: a new search with an empty component, then every link (kFullResolve) or
  // the links of the changed classes.
  void start_search();
  void search_everything();
  void search_changes(double fixed_below);
  [[gnu::always_inline]] inline void visit_link(std::uint32_t l, bool cross, std::uint32_t label);
  // A link of a class the search found: visited when first met (crossed if saturated or flagged
  // in link_seed_ as a changed class's link), its part's label joined with `label` (when looking
  // for twins); returns its local index.
  // (mark, local_of and stamp: link_mark_, link_local_ and stamp_, read once by the caller.)
  [[gnu::always_inline]] inline std::uint32_t path_link(std::uint32_t l, std::uint32_t label,
                                                        bool twins, const std::uint32_t* mark,
                                                        const std::uint32_t* local_of,
                                                        std::uint32_t stamp);
  // Visits the classes on the links queued to be crossed; classes below `fixed_below` stay out.
  void scan(double fixed_below);
  // Makes room for more component links in the per-link fields below (sized together, at least
  // the component's links; only the first comp_links_.size() entries are this solve's).
  void grow_link_fields();
  // Solves the component as it stands into problem_.rate.
  void solve_local();
  // Each component link's capacity less the load of the classes outside.
  void set_capacities();
  // The outside load of each boundary link j with estimated_[j] (see "Estimated boundary links").
  void estimate_boundary();
  // Queues the boundary links that problem_.rate fills and marks for an exact sum the estimated
  // ones it comes near; true when there is one of either.
  bool grow_boundary();

  FlowTables& tables_;
  const SolveStrategy strategy_;
  // The strategy bounds boundary links' outside load, and the tables allow it (a full re-solve has
  // no boundary links).
  const bool bounds_boundary_;
  std::vector<std::uint32_t> changed_;
  std::vector<std::uint32_t> arrivals_;  // classes flows joined this instant (repeats allowed)
  double instant_min_departed_rate_ = std::numeric_limits<double>::infinity();

  std::uint32_t stamp_ = 0;
  std::vector<std::uint32_t> link_mark_;   // per link: stamp of the last search that reached it
  std::vector<std::uint32_t> link_local_;  // per link: its index in the component
  std::vector<std::uint32_t> link_seed_;   // per link: stamp of the last search it is a changed
                                           // class's link in (crossed wherever met)
  // The search took the parts one at a time (no sprayed flow active): part p's links and classes
  // begin at part_link_begin_[p] and part_class_begin_[p] (until a boundary link joins the search).
  bool in_turn_ = false;
  std::vector<std::uint32_t> part_link_begin_;
  std::vector<std::uint32_t> part_class_begin_;
  std::vector<std::uint32_t> scan_queue_;  // links whose classes the search still has to visit

  // The component as a problem with local indices (link j is comp_links_[j], class i is
  // comp_classes_[i]), built as the search finds it.
  std::vector<std::uint32_t> comp_links_;
  std::vector<std::uint32_t> comp_classes_;
  std::vector<char> crossed_;  // per component link: crossed by the search (else boundary)
  // Per component link: a boundary link whose outside load is the bound (no limit in the solve).
  std::vector<char> estimated_;
  ComponentProblem problem_;
  std::vector<double> fixed_load_;  // per component link: load of the classes outside
  // Per component link: load (at the rates before this solve) and flows of the classes inside.
  std::vector<double> inside_load_;
  std::vector<std::uint32_t> inside_count_;
  std::vector<std::uint32_t> fixed_count_;
  std::vector<double> load_;
  std::vector<std::uint32_t> count_;
  MaxMinSolver solver_;
  // Solves the component once per distinct part (twin_parts.hpp); twins_: this solve looks for
  // them (the search labels the parts only then).
  TwinParts twin_parts_;
  bool twins_ = false;
  // The component's parts, found by the search (part_labels.hpp). Every part holds a changed
  // class's link.
  PartLabels labels_;
  std::vector<std::uint32_t> link_label_;    // per component link
  std::vector<std::uint32_t> part_of_link_;  // per component link

  struct Counters {
    std::uint64_t solves = 0;
    std::uint64_t classes_solved = 0;
    std::uint64_t boundary_expansions = 0;
    std::uint64_t boundary_estimates = 0;
    std::uint64_t boundary_estimates_refused = 0;
    std::uint64_t kept_at_arrivals = 0;
  };
  Counters counters_;
  bool arrival_instant_ = false;  // this solve's instant had an arrival
};

}  // namespace stepsim::engine::detail
