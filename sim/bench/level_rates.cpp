#include "sim/bench/level_rates.hpp"

#include <algorithm>
#include <functional>
#include <stdexcept>

#include "sim/engine/drain_time.hpp"

namespace stepsim::bench {

using engine::detail::drain_ps;
using engine::detail::kSecondsPerPs;

namespace {

// Groups whose level is below the smallest departed level by more than this (relative) keep it
// (as IncrementalMaxMin's kFixedRateMargin).
constexpr double kFixedLevelMargin = 1e-9;

}  // namespace

std::uint32_t LevelRates::add_link(double capacity, std::int64_t latency_ps) {
  if (!(capacity > 0.0) || latency_ps < 0)
    throw std::invalid_argument("LevelRates::add_link: bad capacity or latency");
  const auto id = static_cast<std::uint32_t>(capacity_.size());
  capacity_.push_back(capacity);
  latency_ps_.push_back(latency_ps);
  group_flows_.push_back(0);
  level_.push_back(0.0);
  clock_.push_back(0.0);
  clock_ps_.push_back(0);
  members_.emplace_back();
  targets_.emplace_back();
  order_pos_.push_back(kNone);
  end_pos_.push_back(kNone);
  link_load_.push_back(0.0);
  link_classes_.emplace_back();
  remaining_.push_back(0.0);
  unfrozen_.push_back(0);
  unfrozen_members_.push_back(0);
  link_stamp_.push_back(0);
  heap_pos_.push_back(kNone);
  return id;
}

std::uint32_t LevelRates::add_flow(std::span<const std::uint32_t> links, double bytes) {
  const auto f = static_cast<std::uint32_t>(flow_class_.size());
  std::int64_t latency = 0;
  for (const std::uint32_t l : links) {
    if (l >= capacity_.size()) throw std::invalid_argument("LevelRates::add_flow: unknown link");
    if (std::count(links.begin(), links.end(), l) != 1)
      throw std::invalid_argument("LevelRates::add_flow: a link listed twice");
    latency += latency_ps_[l];
  }
  done_.push_back(0);
  target_.push_back(bytes);
  if (!(bytes > 0.0) || links.empty()) {
    flow_class_.push_back(kNone);
    finish_ps_.push_back(latency);
    done_.back() = 1;
    return f;
  }
  finish_ps_.push_back(-1);
  std::vector<std::uint32_t> key(links.begin(), links.end());
  auto [it, inserted] =
      class_of_path_.try_emplace(std::move(key), static_cast<std::uint32_t>(hot_.size()));
  const std::uint32_t cls = it->second;
  if (inserted) {
    path_.insert(path_.end(), links.begin(), links.end());
    path_offset_.push_back(static_cast<std::uint32_t>(path_.size()));
    class_latency_ps_.push_back(latency);
    ClassHot& hot = hot_.emplace_back();
    hot.path_size = static_cast<std::uint32_t>(links.size());
    if (links.size() <= kInlinePath) std::copy(links.begin(), links.end(), hot.path);
    class_flow_list_.emplace_back();
    for (const std::uint32_t l : links)
      link_classes_[l].push_back(cls);
  }
  ++hot_[cls].flows;
  class_flow_list_[cls].push_back(f);
  flow_class_.push_back(cls);
  return f;
}

void LevelRates::settle(std::uint32_t link, std::int64_t now_ps) {
  if (now_ps > clock_ps_[link]) {
    clock_[link] += level_[link] * (static_cast<double>(now_ps - clock_ps_[link]) * kSecondsPerPs);
    clock_ps_[link] = now_ps;
  }
}

const LevelRates::Target* LevelRates::first_target(std::uint32_t link) {
  std::vector<Target>& heap = targets_[link];
  while (!heap.empty()) {
    const Target& t = heap.front();
    const std::uint32_t f = t.flow;
    if (done_[f] == 0 && hot_[flow_class_[f]].group == link && t.target == target_[f]) return &t;
    std::pop_heap(heap.begin(), heap.end(), std::greater<>());
    heap.pop_back();
  }
  return nullptr;
}

void LevelRates::update_end(std::uint32_t link) {
  const Target* t = level_[link] > 0.0 ? first_target(link) : nullptr;
  const std::uint32_t pos = end_pos_[link];
  if (t == nullptr) {
    if (pos != kNone) {
      ends_.remove(pos);
      end_pos_[link] = kNone;
    }
    return;
  }
  const GroupEnd e{clock_ps_[link] + drain_ps(t->target - clock_[link], level_[link]), link};
  if (pos == kNone) {
    ends_.push(e);
  } else {
    ends_.update(pos, e);
  }
}

void LevelRates::depart(std::uint32_t f, std::int64_t now_ps) {
  const std::uint32_t cls = flow_class_[f];
  const std::uint32_t k = hot_[cls].group;
  done_[f] = 1;
  finish_ps_[f] = now_ps + class_latency_ps_[cls];
  std::vector<std::uint32_t>& list = class_flow_list_[cls];
  *std::find(list.begin(), list.end(), f) = list.back();
  list.pop_back();
  const double x = level_[k];
  for (const std::uint32_t m : path(cls))
    link_load_[m] -= x;
  min_departed_level_ = any_departure_ ? std::min(min_departed_level_, x) : x;
  any_departure_ = true;
  --group_flows_[k];
  if (--hot_[cls].flows == 0) {
    std::vector<std::uint32_t>& members = members_[k];
    const std::uint32_t pos = hot_[cls].member_pos;
    members[pos] = members.back();
    hot_[members[pos]].member_pos = pos;
    members.pop_back();
    hot_[cls].member_pos = kNone;
  }
}

void LevelRates::run() {
  full_solve(0);
  while (!ends_.empty()) {
    const std::int64_t now = ends_.top().end_ps;
    ++counters_.instants;
    while (!ends_.empty() && ends_.top().end_ps <= now) {
      const std::uint32_t g = ends_.top().link;
      settle(g, now);
      // The first target is due by construction; the others with it when due within the same
      // picosecond (as FlowNetwork's finish_due_parts).
      const Target* t = first_target(g);
      do {
        const std::uint32_t f = t->flow;
        std::pop_heap(targets_[g].begin(), targets_[g].end(), std::greater<>());
        targets_[g].pop_back();
        depart(f, now);
        t = first_target(g);
      } while (t != nullptr && drain_ps(t->target - clock_[g], level_[g]) == 0);
      update_end(g);
    }
    partial_solve(now);
  }
}

void LevelRates::move_class(std::uint32_t cls, std::uint32_t to) {
  const std::uint32_t from = hot_[cls].group;
  ++counters_.class_moves;
  const double shift = clock_[to] - (from == kNone ? 0.0 : clock_[from]);
  for (const std::uint32_t f : class_flow_list_[cls]) {
    target_[f] += shift;
    targets_[to].push_back({target_[f], f});
    std::push_heap(targets_[to].begin(), targets_[to].end(), std::greater<>());
  }
  hot_[cls].group = to;
}

void LevelRates::freeze(std::uint32_t cls, std::uint32_t at, double level) {
  hot_[cls].frozen = stamp_;
  const std::uint32_t n = hot_[cls].flows;
  const std::uint32_t old = hot_[cls].group;
  unfrozen_members_[old] -= n;
  if (old != at) move_class(cls, at);
  hot_[cls].member_pos = static_cast<std::uint32_t>(new_members_.size());
  new_members_.push_back(cls);
  // (Link `at` takes the load of all the classes it freezes in one sum, in partial_solve.)
  const double load = static_cast<double>(n) * level;
  for (const std::uint32_t m : path(cls)) {
    if (m == at) continue;
    remaining_[m] -= load;
    unfrozen_[m] -= n;
  }
}

void LevelRates::partial_solve(std::int64_t now_ps) {
  if (!any_departure_) return;
  any_departure_ = false;
  ++counters_.partial_solves;
  ++stamp_;
  // The groups below the smallest departed level keep their levels exactly (the departure
  // pruning of IncrementalMaxMin::solve: progressive filling freezes in increasing order of
  // level, and below that level nothing changed); the order holds them first.
  const double fixed_below = min_departed_level_ * (1.0 - kFixedLevelMargin);
  std::size_t first = 0;
  while (first < order_.size() && level_[order_[first]] < fixed_below)
    ++first;
  take_in_play(first, now_ps);
  refill(first, now_ps);
  reorder(first);
  for (const std::uint32_t m : touched_links_)
    link_load_[m] = capacity_[m] - remaining_[m];
}

void LevelRates::touch(std::uint32_t m) {
  if (link_stamp_[m] != stamp_) {
    link_stamp_[m] = stamp_;
    remaining_[m] = capacity_[m] - link_load_[m];
    unfrozen_[m] = 0;
    unfrozen_members_[m] = 0;
    touched_links_.push_back(m);
  }
}

void LevelRates::take_in_play(std::size_t first, std::int64_t now_ps) {
  // Take the load of the classes in play off their links, at their old levels.
  touched_links_.clear();
  for (std::size_t i = first; i < order_.size(); ++i) {
    const std::uint32_t k = order_[i];
    settle(k, now_ps);
    touch(k);
    unfrozen_members_[k] = group_flows_[k];
    const double x = level_[k];
    counters_.classes_in_play += members_[k].size();
    ++counters_.groups_in_play;
    // (Every member crosses k: its own link takes their load in one sum.)
    remaining_[k] += static_cast<double>(group_flows_[k]) * x;
    unfrozen_[k] += group_flows_[k];
    for (const std::uint32_t cls : members_[k]) {
      hot_[cls].in_play = stamp_;
      const std::uint32_t n = hot_[cls].flows;
      const double load = static_cast<double>(n) * x;
      for (const std::uint32_t m : path(cls)) {
        if (m == k) continue;
        touch(m);
        remaining_[m] += load;
        unfrozen_[m] += n;
      }
    }
  }
}

void LevelRates::refill(std::size_t first, std::int64_t now_ps) {
  shares_.clear();
  for (const std::uint32_t m : touched_links_) {
    heap_pos_[m] = kNone;
    if (unfrozen_[m] == 0) continue;
    shares_.push_unordered({std::max(remaining_[m], 0.0) / static_cast<double>(unfrozen_[m]), m});
  }
  shares_.make_heap();
  // Progressive filling over the links, freezing the old group's members first and reading the
  // link's class list only when other classes in play cross it.
  new_order_.clear();
  double level = first > 0 ? level_[order_[first - 1]] : 0.0;
  for (;;) {
    while (!shares_.empty()) {
      const std::uint32_t top = shares_.top().link;
      const double share = unfrozen_[top] == 0 ? 0.0
                                               : std::max(remaining_[top], 0.0) /
                                                     static_cast<double>(unfrozen_[top]);
      if (unfrozen_[top] == 0) {
        heap_pos_[top] = kNone;
        shares_.pop();
      } else if (shares_.top().key < share) {
        shares_.entry(0).key = share;
        shares_.sift_down(0);
      } else {
        break;
      }
    }
    if (shares_.empty()) break;
    const std::uint32_t k = shares_.top().link;
    // (The classes in play cross no link of a fixed group: their other grouped links come later
    // in the order.)
    if (order_pos_[k] < first)
      throw std::logic_error("LevelRates: a fixed group's link saturated again (this is a bug)");
    level = std::max(level, shares_.top().key);
    heap_pos_[k] = kNone;
    shares_.pop();
    saturate(k, level, now_ps);
  }
}

void LevelRates::saturate(std::uint32_t k, double level, std::int64_t now_ps) {
  const std::uint64_t to_freeze = unfrozen_[k];
  std::uint64_t frozen_here = 0;
  new_members_.clear();
  settle(k, now_ps);
  const bool was_group = order_pos_[k] != kNone && unfrozen_members_[k] > 0;
  if (was_group) {
    for (const std::uint32_t cls : members_[k]) {
      if (hot_[cls].frozen == stamp_) continue;
      frozen_here += hot_[cls].flows;
      freeze(cls, k, level);
    }
  }
  if (frozen_here < to_freeze) {
    std::vector<std::uint32_t>& on_link = link_classes_[k];
    std::size_t w = 0;
    for (std::size_t r = 0; r < on_link.size(); ++r) {
      const std::uint32_t cls = on_link[r];
      if (hot_[cls].flows == 0) continue;  // gone: pruned from the list
      on_link[w++] = cls;
      if (hot_[cls].in_play != stamp_ || hot_[cls].frozen == stamp_) continue;
      freeze(cls, k, level);
    }
    counters_.link_scans += on_link.size();
    on_link.resize(w);
  }
  remaining_[k] -= static_cast<double>(to_freeze) * level;
  unfrozen_[k] = 0;
  if (level_[k] != level) {
    ++counters_.level_updates;
    level_[k] = level;
  }
  group_flows_[k] = 0;
  for (const std::uint32_t cls : new_members_)
    group_flows_[k] += hot_[cls].flows;
  members_[k].swap(new_members_);
  new_order_.push_back(k);
  order_pos_[k] = kNone - 1;  // (in the new order; positions below)
}

void LevelRates::reorder(std::size_t first) {
  // Old groups in play that froze nothing are gone.
  for (std::size_t i = first; i < order_.size(); ++i) {
    const std::uint32_t k = order_[i];
    if (order_pos_[k] == kNone - 1) continue;
    level_[k] = 0.0;
    group_flows_[k] = 0;
    members_[k].clear();
    order_pos_[k] = kNone;
    update_end(k);
  }
  order_.resize(first);
  for (const std::uint32_t k : new_order_) {
    order_pos_[k] = static_cast<std::uint32_t>(order_.size());
    order_.push_back(k);
    update_end(k);
  }
}

void LevelRates::full_solve(std::int64_t now_ps) {
  ++counters_.full_solves;
  for (const std::uint32_t l : order_) {
    settle(l, now_ps);
    level_[l] = 0.0;
    group_flows_[l] = 0;
    order_pos_[l] = kNone;
    members_[l].clear();
    targets_[l].clear();
  }
  active_.clear();
  offsets_.assign(1, 0);
  local_path_.clear();
  local_flows_.clear();
  for (std::uint32_t cls = 0; cls < hot_.size(); ++cls) {
    if (hot_[cls].flows == 0) continue;
    active_.push_back(cls);
    local_flows_.push_back(hot_[cls].flows);
    const std::span<const std::uint32_t> links = path(cls);
    local_path_.insert(local_path_.end(), links.begin(), links.end());
    offsets_.push_back(static_cast<std::uint32_t>(local_path_.size()));
  }
  rate_.resize(active_.size());
  bottleneck_.resize(active_.size());
  counters_.classes_solved += active_.size();
  solver_.solve_with_bottlenecks(capacity_, local_flows_, offsets_, local_path_, rate_, bottleneck_,
                                 order_);
  for (std::size_t i = 0; i < order_.size(); ++i) {
    settle(order_[i], now_ps);  // (at level 0: only moves the clock's time)
    order_pos_[order_[i]] = static_cast<std::uint32_t>(i);
  }
  std::fill(link_load_.begin(), link_load_.end(), 0.0);
  for (std::size_t i = 0; i < active_.size(); ++i) {
    const std::uint32_t cls = active_[i];
    const std::uint32_t b = bottleneck_[i];
    level_[b] = rate_[i];
    group_flows_[b] += hot_[cls].flows;
    hot_[cls].member_pos = static_cast<std::uint32_t>(members_[b].size());
    members_[b].push_back(cls);
    const std::uint32_t old = hot_[cls].group;
    if (b != old) {
      ++counters_.class_moves;
      const double shift = clock_[b] - (old == kNone ? 0.0 : clock_[old]);
      for (const std::uint32_t f : class_flow_list_[cls])
        target_[f] += shift;
      hot_[cls].group = b;
    }
    for (const std::uint32_t f : class_flow_list_[cls])
      targets_[b].push_back({target_[f], f});
    const double load = static_cast<double>(hot_[cls].flows) * rate_[i];
    for (const std::uint32_t m : path(cls))
      link_load_[m] += load;
  }
  ends_.clear();
  std::fill(end_pos_.begin(), end_pos_.end(), kNone);
  for (const std::uint32_t l : order_) {
    std::make_heap(targets_[l].begin(), targets_[l].end(), std::greater<>());
    update_end(l);
  }
}

}  // namespace stepsim::bench
