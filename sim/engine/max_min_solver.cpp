#include "sim/engine/max_min_solver.hpp"

#include <algorithm>
#include <cassert>
#include <limits>

namespace stepsim::engine {

void MaxMinSolver::solve(const MaxMinProblem& problem, std::span<double> rate) {
  assert(problem.path_offsets.size() == problem.class_flows.size() + 1);
  assert(rate.size() == problem.class_flows.size());
  assert(problem.path_weights.empty() || problem.path_weights.size() == problem.path_links.size());
  assert(problem.class_cap.empty() || problem.class_cap.size() == problem.class_flows.size());
  if (problem.path_weights.empty()) {
    transpose<false>(problem);
    place_links<false>(problem.link_capacity.size(), problem.class_cap);
    fill<false>(problem, rate);
  } else {
    transpose<true>(problem);
    place_links<true>(problem.link_capacity.size(), problem.class_cap);
    fill<true>(problem, rate);
  }
}

void MaxMinSolver::solve_with_bottlenecks(std::span<const double> link_capacity,
                                          std::span<const std::uint32_t> class_flows,
                                          std::span<const std::uint32_t> path_offsets,
                                          std::span<const std::uint32_t> path_links,
                                          std::span<double> rate,
                                          std::span<std::uint32_t> bottleneck,
                                          std::vector<std::uint32_t>& order) {
  assert(path_offsets.size() == class_flows.size() + 1);
  assert(rate.size() == class_flows.size());
  assert(bottleneck.size() == class_flows.size());
  order.clear();
  bottleneck_ = bottleneck;
  order_ = &order;
  const Problem problem{link_capacity, class_flows, path_offsets, path_links, {}, {}};
  transpose<false>(problem);
  place_links<false>(link_capacity.size(), {});
  fill<false, true>(problem, rate);
  bottleneck_ = {};
  order_ = nullptr;
}

template <bool kWeighted>
void MaxMinSolver::transpose(const Problem& problem) {
  const std::size_t links = problem.link_capacity.size();
  const std::size_t classes = problem.class_flows.size();
  const std::span<const std::uint32_t> class_flows = problem.class_flows;
  const std::span<const std::uint32_t> path_offsets = problem.path_offsets;
  const std::span<const std::uint32_t> path_links = problem.path_links;
  remaining_.assign(problem.link_capacity.begin(), problem.link_capacity.end());
  unfrozen_.assign(links, 0);
  if constexpr (kWeighted) demand_.assign(links, 0.0);
  touched_mark_.assign(links, 0);
  link_offsets_.assign(links + 1, 0);
  frozen_.assign(classes, 0);

  // Transpose the paths into link -> classes with a counting sort (keeps class order per link).
  for (std::size_t c = 0; c < classes; ++c) {
    for (std::uint32_t k = path_offsets[c]; k < path_offsets[c + 1]; ++k) {
      const std::uint32_t l = path_links[k];
      ++link_offsets_[l + 1];
      unfrozen_[l] += class_flows[c];
      if constexpr (kWeighted) demand_[l] += problem.use<true>(c, k);
    }
  }
  for (std::size_t l = 0; l < links; ++l)
    link_offsets_[l + 1] += link_offsets_[l];
  link_classes_.resize(link_offsets_[links]);
  touched_.assign(link_offsets_.begin(), link_offsets_.end() - 1);  // fill cursors
  for (std::size_t c = 0; c < classes; ++c) {
    for (std::uint32_t k = path_offsets[c]; k < path_offsets[c + 1]; ++k) {
      link_classes_[touched_[path_links[k]]++] = static_cast<std::uint32_t>(c);
    }
  }
  touched_.clear();
}

template <bool kWeighted>
void MaxMinSolver::place_links(std::size_t links, std::span<const double> class_cap) {
  // A link crossed by one class only (its path lists it once) can only ever limit that class, and
  // its fair share stays capacity / flows until the class freezes: it becomes a cap on the class
  // instead of a heap entry. In sparse traffic most links are such private links, and the heap
  // shrinks to the shared ones.
  caps_.clear();
  share_.resize(links);
  heap_pos_.assign(links, kAbsent);
  heap_.clear();
  for (std::uint32_t l = 0; l < links; ++l) {
    if (unfrozen_[l] == 0) continue;
    share_[l] = remaining_[l] / demand<kWeighted>(l);
    if (link_offsets_[l + 1] - link_offsets_[l] == 1) {
      caps_.push_back({share_[l], link_classes_[link_offsets_[l]], l});
    } else {
      heap_.push_unordered({share_[l], l});
    }
  }
  auto before = [](const Cap& a, const Cap& b) {
    return a.share < b.share || (a.share == b.share && a.cls < b.cls);
  };
  std::sort(caps_.begin(), caps_.end(), before);
  // A class's own cap is a private link of that capacity per flow (kAbsent: no link froze it).
  // They come in class order, and in a training step mostly with one value (each member's send
  // ceiling): already sorted, merged with the links' caps instead of sorted with them.
  class_caps_.clear();
  for (std::uint32_t c = 0; c < class_cap.size(); ++c)
    if (class_cap[c] != std::numeric_limits<double>::infinity())
      class_caps_.push_back({class_cap[c], c, kAbsent});
  heap_.make_heap();
  if (class_caps_.empty()) return;
  if (!std::is_sorted(class_caps_.begin(), class_caps_.end(), before))
    std::sort(class_caps_.begin(), class_caps_.end(), before);
  if (caps_.empty()) {
    caps_.swap(class_caps_);
    return;
  }
  merged_caps_.resize(caps_.size() + class_caps_.size());
  std::merge(caps_.begin(), caps_.end(), class_caps_.begin(), class_caps_.end(),
             merged_caps_.begin(), before);
  caps_.swap(merged_caps_);
}

void MaxMinSolver::settle_top() {
  // Bring the top up to date: a link whose classes all froze leaves, one whose share grew since
  // it was placed goes down with its current share, until the top holds its current share (then
  // it is the smallest share of all, as every other key is at most its link's share).
  while (!heap_.empty()) {
    const std::uint32_t top = heap_.top().link;
    if (unfrozen_[top] == 0) {
      pop_top();
    } else if (heap_.top().key < share_[top]) {
      heap_.entry(0).key = share_[top];
      heap_.sift_down(0);
    } else {
      break;
    }
  }
}

template <bool kWeighted>
void MaxMinSolver::update_touched() {
  // A link's share only grows when classes below it freeze (they take level <= share per flow
  // off it): its key stays as a lower bound until it reaches the top. Rounding can lower a share
  // by a hair below its key, which a sift up (then one comparison) takes care of at once. A link
  // left without unfrozen flows stays until it reaches the top.
  for (const std::uint32_t l2 : touched_) {
    // A private link, the link just popped, or one to drop at the top.
    if (heap_pos_[l2] == kAbsent || unfrozen_[l2] == 0) continue;
    const double share = std::max(remaining_[l2], 0.0) / demand<kWeighted>(l2);
    share_[l2] = share;
    const std::uint32_t pos = heap_pos_[l2];
    if (share < heap_[pos].key) {
      heap_.entry(pos).key = share;
      heap_.sift_up(pos);
    }
  }
  touched_.clear();
}

template <bool kWeighted, bool kBottlenecks>
void MaxMinSolver::fill(const Problem& problem, std::span<double> rate) {
  const std::span<const std::uint32_t> class_flows = problem.class_flows;
  const std::span<const std::uint32_t> path_offsets = problem.path_offsets;
  const std::span<const std::uint32_t> path_links = problem.path_links;
  const std::size_t classes = class_flows.size();
  double level = 0.0;
  std::uint32_t stamp = 0;
  std::size_t unfrozen_classes = classes;
  auto freeze = [&](std::uint32_t c, std::uint32_t at) {
    if constexpr (kBottlenecks) {
      bottleneck_[c] = at;
    } else {
      (void)at;
    }
    frozen_[c] = 1;
    --unfrozen_classes;
    rate[c] = level;
    for (std::uint32_t p = path_offsets[c]; p < path_offsets[c + 1]; ++p) {
      const std::uint32_t l2 = path_links[p];
      const double u = problem.use<kWeighted>(c, p);
      remaining_[l2] -= u * level;
      unfrozen_[l2] -= class_flows[c];
      if constexpr (kWeighted) demand_[l2] = unfrozen_[l2] == 0 ? 0.0 : demand_[l2] - u;
      if (touched_mark_[l2] != stamp) {
        touched_mark_[l2] = stamp;
        touched_.push_back(l2);
      }
    }
  };
  std::size_t next_cap = 0;
  // Until every class is frozen: the links left in the heap then have no unfrozen flows.
  while (unfrozen_classes > 0) {
    while (next_cap < caps_.size() && frozen_[caps_[next_cap].cls] != 0)
      ++next_cap;
    settle_top();
    const bool have_cap = next_cap < caps_.size();
    if (!have_cap && heap_.empty()) break;
    ++stamp;
    // In exact arithmetic shares only grow as the water rises; rounding may make a later share a
    // hair lower than the level reached, which the max() absorbs.
    if (have_cap && (heap_.empty() || caps_[next_cap].share <= heap_.top().key)) {
      level = std::max(level, caps_[next_cap].share);
      freeze(caps_[next_cap].cls, caps_[next_cap].link);
      if constexpr (kBottlenecks) order_->push_back(caps_[next_cap].link);
      ++next_cap;
    } else {
      const std::uint32_t l = heap_.top().link;
      pop_top();
      level = std::max(level, share_[l]);
      // (A link reaches the top only with unfrozen flows: it freezes at least one class.)
      for (std::uint32_t k = link_offsets_[l]; k < link_offsets_[l + 1]; ++k) {
        if (frozen_[link_classes_[k]] == 0) freeze(link_classes_[k], l);
      }
      if constexpr (kBottlenecks) order_->push_back(l);
    }
    update_touched<kWeighted>();
  }
}

void MaxMinSolver::pop_top() {
  heap_pos_[heap_.top().link] = kAbsent;
  heap_.pop_bottom_up();
}

}  // namespace stepsim::engine
