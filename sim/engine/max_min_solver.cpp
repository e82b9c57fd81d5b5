#include "sim/engine/max_min_solver.hpp"

#include <algorithm>
#include <cassert>

namespace stepsim::engine {
namespace {

// Min-heap order on (share, link): the smallest fair share first, ties by link index.
bool heap_after(double share_a, std::uint32_t link_a, double share_b, std::uint32_t link_b) {
  return share_a > share_b || (share_a == share_b && link_a > link_b);
}

}  // namespace

void MaxMinSolver::solve(std::span<const double> link_capacity,
                         std::span<const std::uint32_t> class_flows,
                         std::span<const std::uint32_t> path_offsets,
                         std::span<const std::uint32_t> path_links, std::span<double> rate) {
  const std::size_t links = link_capacity.size();
  const std::size_t classes = class_flows.size();
  assert(path_offsets.size() == classes + 1);
  assert(rate.size() == classes);

  remaining_.assign(link_capacity.begin(), link_capacity.end());
  unfrozen_.assign(links, 0);
  version_.assign(links, 0);
  touched_mark_.assign(links, 0);
  link_offsets_.assign(links + 1, 0);
  frozen_.assign(classes, 0);

  // Transpose the paths into link -> classes with a counting sort (keeps class order per link).
  for (std::size_t c = 0; c < classes; ++c) {
    for (std::uint32_t k = path_offsets[c]; k < path_offsets[c + 1]; ++k) {
      const std::uint32_t l = path_links[k];
      ++link_offsets_[l + 1];
      unfrozen_[l] += class_flows[c];
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

  auto heap_less = [](const HeapEntry& a, const HeapEntry& b) {
    return heap_after(a.share, a.link, b.share, b.link);
  };
  heap_.clear();
  for (std::uint32_t l = 0; l < links; ++l) {
    if (unfrozen_[l] > 0) {
      heap_.push_back({remaining_[l] / static_cast<double>(unfrozen_[l]), l, 0});
    }
  }
  std::make_heap(heap_.begin(), heap_.end(), heap_less);

  double level = 0.0;
  std::uint32_t stamp = 0;
  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), heap_less);
    const HeapEntry top = heap_.back();
    heap_.pop_back();
    const std::uint32_t l = top.link;
    if (top.version != version_[l] || unfrozen_[l] == 0) continue;
    // In exact arithmetic shares only grow as the water rises; rounding may make a later share a
    // hair lower than the level reached, which the max() absorbs.
    level = std::max(level, top.share);
    ++stamp;
    for (std::uint32_t k = link_offsets_[l]; k < link_offsets_[l + 1]; ++k) {
      const std::uint32_t c = link_classes_[k];
      if (frozen_[c] != 0) continue;
      frozen_[c] = 1;
      rate[c] = level;
      const double n = static_cast<double>(class_flows[c]);
      for (std::uint32_t p = path_offsets[c]; p < path_offsets[c + 1]; ++p) {
        const std::uint32_t l2 = path_links[p];
        remaining_[l2] -= n * level;
        unfrozen_[l2] -= class_flows[c];
        if (touched_mark_[l2] != stamp) {
          touched_mark_[l2] = stamp;
          touched_.push_back(l2);
        }
      }
    }
    for (const std::uint32_t l2 : touched_) {
      ++version_[l2];
      if (unfrozen_[l2] > 0) {
        const double share = std::max(remaining_[l2], 0.0) / static_cast<double>(unfrozen_[l2]);
        heap_.push_back({share, l2, version_[l2]});
        std::push_heap(heap_.begin(), heap_.end(), heap_less);
      }
    }
    touched_.clear();
  }
}

}  // namespace stepsim::engine
