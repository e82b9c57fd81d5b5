#include "sim/engine/flow_network.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <bit>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include "sim/common/input_error.hpp"

namespace stepsim::engine {
namespace {

constexpr double kSecondsPerPs = 1e-12;
constexpr double kPsPerSecond = 1e12;
// A re-solve that moves a rate by less than this (relative) keeps the old rate, so that classes
// the change did not really affect keep their scheduled drain ends.
constexpr double kRateChangeTolerance = 1e-12;
// Classes whose rate is below the smallest departed rate by more than this (relative) keep their
// rates without a re-solve (FlowNetwork::solve()).
constexpr double kFixedRateMargin = 1e-9;
// A link counts as saturated (the search crosses it; a boundary link that reaches it joins the
// search) from this relative margin below its capacity. Crossing a link that is not saturated is
// never wrong, only slower, so the margin is generous.
constexpr double kSaturatedMargin = 1e-7;
// Drain ends are capped here (about 46 days), far beyond any step, to stay clear of overflow.
constexpr double kMaxDrainPs = 4e18;
// The solve's loops over classes read one random cache line per class and little else, so they
// wait on memory; they ask for the line of the class this many places ahead (in their list) early.
constexpr std::size_t kPrefetchAhead = 8;

void prefetch(const void* address) {
  __builtin_prefetch(address);
}

// Time in whole picoseconds to drain `bytes` at `rate`, rounded up so that a flow never finishes
// before its bytes could drain. The slack (1e-3 ps plus a relative 1e-12) absorbs the rounding
// noise of the double arithmetic, so an exact drain end of 1000 ps computed as 1000.0000001 ps
// stays at 1000 ps instead of becoming a separate instant at 1001 ps.
std::int64_t drain_ps(double bytes, double rate) {
  if (bytes <= 0.0) return 0;
  double ps = bytes / rate * kPsPerSecond;
  ps -= 1e-3 + ps * 1e-12;
  if (ps <= 0.0) return 0;
  if (ps >= kMaxDrainPs) return static_cast<std::int64_t>(kMaxDrainPs);
  return static_cast<std::int64_t>(std::ceil(ps));
}

std::uint64_t hash_path(std::span<const LinkId> path, std::span<const double> shares) {
  // FNV-1a over the link indices (and a sprayed path's shares), then a final mix; collisions are
  // resolved by comparing paths.
  std::uint64_t h = 1469598103934665603ull;
  for (const LinkId l : path) {
    h ^= l.value;
    h *= 1099511628211ull;
  }
  for (const double share : shares) {
    h ^= std::bit_cast<std::uint64_t>(share);
    h *= 1099511628211ull;
  }
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

[[noreturn]] void broken(const std::string& what) {
  throw std::logic_error("FlowNetwork invariant broken (this is a bug): " + what);
}

bool min_heap_after(const std::pair<double, std::uint32_t>& a,
                    const std::pair<double, std::uint32_t>& b) {
  return a > b;  // std heaps are max-heaps; (target, part) pairs compare fully, so order is total
}

}  // namespace

FlowNetwork::FlowNetwork(Simulator& simulator, FlowNetworkOptions options)
    : sim_(simulator),
      options_(std::move(options)),
      window_start_ps_(simulator.now().picoseconds()) {
  if (!(options_.idle_tolerance >= 0.0 && options_.idle_tolerance < 1.0)) {
    throw std::invalid_argument("FlowNetwork: idle_tolerance must be in [0, 1), got " +
                                std::to_string(options_.idle_tolerance));
  }
  std::sort(options_.sampled_links.begin(), options_.sampled_links.end());
}

FlowNetwork::~FlowNetwork() {
  sim_.cancel(drain_event_);
}

LinkId FlowNetwork::add_link(BytesPerSecond bandwidth, Time latency) {
  if (!(bandwidth.value() > 0.0) || !std::isfinite(bandwidth.value())) {
    throw std::invalid_argument(
        "FlowNetwork::add_link: bandwidth must be positive and finite, got " +
        std::to_string(bandwidth.value()) + " B/s");
  }
  if (latency < Time::zero()) {
    throw std::invalid_argument("FlowNetwork::add_link: latency must not be negative, got " +
                                std::to_string(latency.picoseconds()) + " ps");
  }
  const auto id = static_cast<std::uint32_t>(link_capacity_.size());
  const std::int64_t now_ps = sim_.now().picoseconds();
  link_capacity_.push_back(bandwidth.value());
  link_latency_.push_back(latency);
  link_classes_.emplace_back();
  link_shares_.emplace_back();
  link_load_.push_back(0.0);
  link_flows_.push_back(0);
  link_bytes_.push_back(0.0);
  link_lifetime_bytes_.push_back(0.0);
  link_busy_ps_.push_back(0);
  link_settled_ps_.push_back(now_ps);
  link_peak_flows_.push_back(0);
  link_samples_.emplace_back();
  link_sampled_.push_back(
      options_.record_utilization_samples &&
              (options_.sampled_links.empty() ||
               std::binary_search(options_.sampled_links.begin(), options_.sampled_links.end(),
                                  static_cast<std::uint32_t>(link_sampled_.size())))
          ? 1
          : 0);
  link_saturated_.push_back(0);
  link_mark_.push_back(0);
  link_local_.push_back(0);
  return LinkId{id};
}

FlowId FlowNetwork::start_flow(std::int64_t source, std::int64_t destination, Bytes bytes,
                               std::span<const LinkId> path, FlowCallback on_done) {
  const WeightedPath one{path, 1.0};
  return start_flow(source, destination, bytes, std::span<const WeightedPath>(&one, 1),
                    std::move(on_done));
}

FlowId FlowNetwork::start_flow(std::int64_t source, std::int64_t destination, Bytes bytes,
                               std::span<const WeightedPath> paths, FlowCallback on_done) {
  if (paths.empty()) throw std::invalid_argument("FlowNetwork::start_flow: no path given");
  if (bytes < Bytes(0)) throw std::invalid_argument("FlowNetwork::start_flow: negative size");
  double total_weight = 0.0;
  for (const WeightedPath& p : paths) {
    if (!(p.weight > 0.0) || !std::isfinite(p.weight)) {
      throw std::invalid_argument("FlowNetwork::start_flow: path weight must be positive, got " +
                                  std::to_string(p.weight));
    }
    total_weight += p.weight;
    for (const LinkId l : p.links) {
      if (l.value >= link_capacity_.size()) {
        throw std::invalid_argument("FlowNetwork::start_flow: unknown link " +
                                    std::to_string(l.value));
      }
    }
  }

  const Time now = sim_.now();
  const std::uint32_t f = start_record(source, destination, bytes, std::move(on_done));
  for (const WeightedPath& p : paths) {
    const double part_bytes =
        paths.size() == 1 ? bytes.as_double() : bytes.as_double() * (p.weight / total_weight);
    if (part_bytes > 0.0 && !p.links.empty()) {
      add_part(f, p.links, part_bytes);
    } else {
      Time latency = Time::zero();
      for (const LinkId l : p.links)
        latency += link_latency_[l.value];
      flows_[f].finish = std::max(flows_[f].finish, now + latency);
    }
  }
  return finish_start(f);
}

FlowId FlowNetwork::start_sprayed_flow(std::int64_t source, std::int64_t destination, Bytes bytes,
                                       std::span<const LinkShare> links, Time latency,
                                       FlowCallback on_done) {
  if (bytes < Bytes(0)) throw std::invalid_argument("FlowNetwork::start_flow: negative size");
  if (latency < Time::zero())
    throw std::invalid_argument("FlowNetwork::start_sprayed_flow: negative latency");
  // The class keeps its links in increasing order: the same set given in another order is the
  // same class, and a link's place in the path is found by bisection.
  std::vector<LinkShare> sorted(links.begin(), links.end());
  std::sort(sorted.begin(), sorted.end(),
            [](const LinkShare& a, const LinkShare& b) { return a.link.value < b.link.value; });
  std::vector<LinkId> path;
  std::vector<double> shares;
  path.reserve(sorted.size());
  shares.reserve(sorted.size());
  for (const LinkShare& l : sorted) {
    if (l.link.value >= link_capacity_.size()) {
      throw std::invalid_argument("FlowNetwork::start_sprayed_flow: unknown link " +
                                  std::to_string(l.link.value));
    }
    if (!(l.share > 0.0) || !std::isfinite(l.share)) {
      throw std::invalid_argument("FlowNetwork::start_sprayed_flow: share must be positive, got " +
                                  std::to_string(l.share));
    }
    if (!path.empty() && path.back().value == l.link.value)
      throw std::invalid_argument("FlowNetwork::start_sprayed_flow: a link listed twice");
    path.push_back(l.link);
    shares.push_back(l.share);
  }
  const std::uint32_t f = start_record(source, destination, bytes, std::move(on_done));
  if (bytes > Bytes(0) && !path.empty()) {
    add_part(f, path, bytes.as_double(), shares, latency);
  } else {
    flows_[f].finish = sim_.now() + latency;
  }
  return finish_start(f);
}

std::uint32_t FlowNetwork::start_record(std::int64_t source, std::int64_t destination, Bytes bytes,
                                        FlowCallback on_done) {
  const Time now = sim_.now();
  const std::uint32_t f = acquire_flow();
  FlowRecord& rec = flows_[f];
  rec.on_done = std::move(on_done);
  rec.source = source;
  rec.destination = destination;
  rec.bytes = bytes;
  rec.start = now;
  rec.finish = now;
  rec.parts_left = 0;
  rec.first_part = kNone;
  rec.active = true;
  ++active_flows_;
  return f;
}

FlowId FlowNetwork::finish_start(std::uint32_t f) {
  FlowRecord& rec = flows_[f];
  if (rec.parts_left == 0) {
    sim_.schedule_at(rec.finish, [this, f] { deliver(f); });
  }
  return FlowId{(static_cast<std::uint64_t>(rec.generation) << 32) | f};
}

std::uint32_t FlowNetwork::acquire_flow() {
  if (!free_flows_.empty()) {
    const std::uint32_t f = free_flows_.back();
    free_flows_.pop_back();
    return f;
  }
  flows_.emplace_back();
  return static_cast<std::uint32_t>(flows_.size() - 1);
}

void FlowNetwork::add_part(std::uint32_t flow, std::span<const LinkId> path, double bytes,
                           std::span<const double> shares, Time latency) {
  std::uint32_t p;
  if (!free_parts_.empty()) {
    p = free_parts_.back();
    free_parts_.pop_back();
  } else {
    p = static_cast<std::uint32_t>(parts_.size());
    parts_.emplace_back();
  }
  const std::uint32_t cls = find_or_create_class(path, shares, latency);
  FlowClass& c = classes_[cls];
  ClassHot& h = hot_[cls];
  const std::int64_t now_ps = sim_.now().picoseconds();
  settle_class(cls, now_ps);
  ClassDrain& d = drain_[cls];
  const double target = d.drained + bytes;
  c.targets.emplace_back(target, p);
  std::push_heap(c.targets.begin(), c.targets.end(), min_heap_after);
  d.first_target = c.targets.front().first;

  Part& part = parts_[p];
  part.flow = flow;
  part.cls = cls;
  part.bytes = bytes;
  part.target = target;
  FlowRecord& rec = flows_[flow];
  part.next = rec.first_part;
  rec.first_part = p;
  ++rec.parts_left;

  if (h.flows == 0) {
    // Activate: the class joins the lists of the links it crosses.
    const std::span<const std::uint32_t> links = this->path(cls);
    for (std::size_t i = 0; i < links.size(); ++i) {
      std::vector<std::uint32_t>& on_link = link_classes_[links[i]];
      c.slot_in_link[i] = static_cast<std::uint32_t>(on_link.size());
      on_link.push_back(cls);
      link_shares_[links[i]].push_back(share(cls, i));
    }
  }
  ++h.flows;
  instant_has_arrival_ = true;
  mark_dirty(cls);
  if (h.rate > 0.0) {
    // Already draining at a solved rate: the new flow may be the first to finish.
    update_drain_end(cls);
    reschedule_drain_event();
  }
}

std::uint32_t FlowNetwork::find_or_create_class(std::span<const LinkId> path,
                                                std::span<const double> shares, Time latency) {
  const bool spray = !shares.empty();
  const std::uint64_t h = hash_path(path, shares) ^ (spray ? 0x5157a7edull : 0);
  std::uint32_t* const found = class_by_hash_.find(h);
  std::uint32_t head = kNone;
  if (found != nullptr) {
    head = *found;
    for (std::uint32_t c = head; c != kNone; c = classes_[c].next_same_hash) {
      const std::span<const std::uint32_t> links = this->path(c);
      if (sprayed(hot_[c]) == spray && links.size() == path.size() &&
          std::equal(path.begin(), path.end(), links.begin(),
                     [](LinkId a, std::uint32_t b) { return a.value == b; }) &&
          (!spray || (std::equal(shares.begin(), shares.end(), classes_[c].shares.begin()) &&
                      classes_[c].latency == latency))) {
        return c;
      }
    }
  }
  std::uint32_t cls;
  if (!free_classes_.empty()) {
    cls = free_classes_.back();
    free_classes_.pop_back();
  } else {
    cls = static_cast<std::uint32_t>(classes_.size());
    classes_.emplace_back();
    hot_.emplace_back();
    drain_.emplace_back();
  }
  FlowClass& c = classes_[cls];
  ClassHot& hot = hot_[cls];
  hot.path_size = static_cast<std::uint32_t>(path.size()) | (spray ? kSprayedBit : 0);
  std::uint32_t* const links = hot.path_size <= kInlinePath ? hot.path : nullptr;
  c.long_path.clear();
  c.shares.assign(shares.begin(), shares.end());
  Time path_latency = Time::zero();
  for (std::size_t i = 0; i < path.size(); ++i) {
    if (links != nullptr) {
      links[i] = path[i].value;
    } else {
      c.long_path.push_back(path[i].value);
    }
    path_latency += link_latency_[path[i].value];
  }
  c.link_bytes_per_byte = 0.0;
  if (spray) {
    for (const double share : shares)
      c.link_bytes_per_byte += share;
  } else {
    c.link_bytes_per_byte = static_cast<double>(path.size());
  }
  c.slot_in_link.assign(path.size(), kNone);
  c.targets.clear();
  c.hash = h;
  c.latency = spray ? latency : path_latency;
  hot.rate = 0.0;
  drain_[cls] = ClassDrain{.drained = 0.0,
                           .settled_ps = sim_.now().picoseconds(),
                           .first_target = 0.0,
                           .heap_pos = kNone};
  hot.flows = 0;
  c.next_same_hash = head;
  c.dirty = false;
  c.in_use = true;
  if (found != nullptr) {
    *found = cls;  // classes_ may have grown, but the table did not move
  } else {
    class_by_hash_.insert(h, cls);
  }
  return cls;
}

void FlowNetwork::release_class(std::uint32_t cls) {
  FlowClass& c = classes_[cls];
  std::uint32_t* const head = class_by_hash_.find(c.hash);
  if (*head == cls) {
    if (c.next_same_hash == kNone) {
      class_by_hash_.erase(c.hash);
    } else {
      *head = c.next_same_hash;
    }
  } else {
    std::uint32_t prev = *head;
    while (classes_[prev].next_same_hash != cls)
      prev = classes_[prev].next_same_hash;
    classes_[prev].next_same_hash = c.next_same_hash;
  }
  c.in_use = false;
  c.next_same_hash = kNone;
  free_classes_.push_back(cls);
}

void FlowNetwork::mark_dirty(std::uint32_t cls) {
  FlowClass& c = classes_[cls];
  if (!c.dirty) {
    c.dirty = true;
    dirty_.push_back(cls);
  }
  if (!solve_requested_) {
    solve_requested_ = true;
    sim_.request_instant_end(*this);
  }
}

void FlowNetwork::settle_class(std::uint32_t cls, std::int64_t now_ps) {
  ClassDrain& d = drain_[cls];
  if (now_ps > d.settled_ps) {
    d.drained += hot_[cls].rate * (static_cast<double>(now_ps - d.settled_ps) * kSecondsPerPs);
    d.settled_ps = now_ps;
  }
}

std::int64_t FlowNetwork::drain_end_ps(std::uint32_t cls) const {
  const ClassDrain& d = drain_[cls];
  // Saturates at the end of the clock (a late start); drain_event reports a drain cut short.
  const std::int64_t left = drain_ps(d.first_target - d.drained, hot_[cls].rate);
  const std::int64_t last = Time::max().picoseconds();
  return left > last - d.settled_ps ? last : d.settled_ps + left;
}

void FlowNetwork::update_drain_end(std::uint32_t cls) {
  heap_place(cls, drain_end_ps(cls));
}

void FlowNetwork::reschedule_drain_event() {
  if (drain_heap_.empty()) {
    sim_.cancel(drain_event_);
    drain_event_ps_ = -1;
    return;
  }
  const std::int64_t at = std::max(drain_heap_[0].end_ps, sim_.now().picoseconds());
  if (at == drain_event_ps_ && sim_.pending(drain_event_)) return;
  sim_.cancel(drain_event_);
  drain_event_ = sim_.schedule_at(Time::ps(at), [this] { drain_event(); });
  drain_event_ps_ = at;
}

void FlowNetwork::drain_event() {
  drain_event_ = EventHandle();
  drain_event_ps_ = -1;
  const Time now = sim_.now();
  const std::int64_t now_ps = now.picoseconds();
  while (!drain_heap_.empty() && drain_heap_[0].end_ps <= now_ps) {
    const std::uint32_t cls = drain_heap_[0].cls;
    FlowClass& c = classes_[cls];
    ClassHot& h = hot_[cls];
    ClassDrain& d = drain_[cls];
    settle_class(cls, now_ps);
    // Due with bytes left: its drain end was capped (kMaxDrainPs, or the end of the clock).
    if (d.first_target - d.drained > 1e-7 * d.first_target + 1.0) {
      throw InputError(fmt::format(
          "simulated time runs out: at {} a transfer still has {} to send at {}; one transfer "
          "may take up to about 46 days and the clock stops at about 106 days (is a size or a "
          "start time too large?)",
          format_time(now),
          format_bytes(
              Bytes(static_cast<std::int64_t>(std::min(d.first_target - d.drained, 9e18)))),
          format_bandwidth(BytesPerSecond(h.rate))));
    }
    instant_min_departed_rate_ = std::min(instant_min_departed_rate_, h.rate);
    // The first target is due by construction; the others finish with it when they are due within
    // the same picosecond.
    std::uint32_t departed = 0;
    do {
      std::pop_heap(c.targets.begin(), c.targets.end(), min_heap_after);
      const std::uint32_t p = c.targets.back().second;
      c.targets.pop_back();
      if (!c.targets.empty()) d.first_target = c.targets.front().first;
      --h.flows;
      ++departed;
      finish_part(p, now);
    } while (!c.targets.empty() && drain_ps(d.first_target - d.drained, h.rate) == 0);
    if (options_.idle_tolerance > 0.0 && !depart_needs_solve(cls, departed, now_ps)) {
      // Deferred: the class seeds the next solve, whenever a change runs one.
      if (!c.dirty) {
        c.dirty = true;
        dirty_.push_back(cls);
      }
      ++deferred_departures_;
    } else {
      mark_dirty(cls);
    }
    if (h.flows == 0) {
      heap_remove(cls);
      h.rate = 0.0;
      // Deactivate: leave the link lists (swap-remove, fixing the moved class's slot).
      const std::span<const std::uint32_t> links = path(cls);
      for (std::size_t i = 0; i < links.size(); ++i) {
        std::vector<std::uint32_t>& on_link = link_classes_[links[i]];
        std::vector<double>& shares_on_link = link_shares_[links[i]];
        const std::uint32_t slot = c.slot_in_link[i];
        const std::uint32_t moved = on_link.back();
        on_link[slot] = moved;
        on_link.pop_back();
        shares_on_link[slot] = shares_on_link.back();
        shares_on_link.pop_back();
        if (moved != cls || slot != on_link.size()) {
          FlowClass& m = classes_[moved];
          const std::span<const std::uint32_t> moved_links = path(moved);
          if (sprayed(hot_[moved])) {
            // A sprayed class lists each link once, in increasing order (start_sprayed_flow
            // sorts them), and may list hundreds: found by bisection.
            const auto at = std::lower_bound(moved_links.begin(), moved_links.end(), links[i]);
            m.slot_in_link[static_cast<std::size_t>(at - moved_links.begin())] = slot;
          } else {
            for (std::size_t j = 0; j < moved_links.size(); ++j) {
              if (moved_links[j] == links[i] && m.slot_in_link[j] == on_link.size()) {
                m.slot_in_link[j] = slot;
                break;
              }
            }
          }
        }
        c.slot_in_link[i] = kNone;
      }
    } else {
      update_drain_end(cls);
    }
  }
  reschedule_drain_event();
}

void FlowNetwork::finish_part(std::uint32_t part_index, Time at) {
  Part& part = parts_[part_index];
  const FlowClass& c = classes_[part.cls];
  const ClassHot& h = hot_[part.cls];
  finished_link_bytes_ += part.bytes * c.link_bytes_per_byte;
  // A drain end rounded up to the picosecond lets the links carry up to one picosecond of the
  // part's rate beyond its bytes; the conservation check allows exactly that.
  rounding_link_bytes_ += h.rate * kSecondsPerPs * c.link_bytes_per_byte;
  part.cls = kNone;
  const std::uint32_t f = part.flow;
  FlowRecord& rec = flows_[f];
  rec.finish = std::max(rec.finish, at + c.latency);
  if (--rec.parts_left == 0) {
    sim_.schedule_at(rec.finish, [this, f] { deliver(f); });
  }
}

void FlowNetwork::deliver(std::uint32_t flow) {
  FlowRecord& rec = flows_[flow];
  const FlowCompletion done{FlowId{(static_cast<std::uint64_t>(rec.generation) << 32) | flow},
                            rec.source,
                            rec.destination,
                            rec.bytes,
                            rec.start,
                            rec.finish};
  FlowCallback callback = std::move(rec.on_done);
  for (std::uint32_t p = rec.first_part; p != kNone;) {
    const std::uint32_t next = parts_[p].next;
    free_parts_.push_back(p);
    p = next;
  }
  rec.first_part = kNone;
  rec.active = false;
  ++rec.generation;
  free_flows_.push_back(flow);
  --active_flows_;
  if (callback) callback(done);
}

BytesPerSecond FlowNetwork::current_rate(FlowId flow) const {
  const auto slot = static_cast<std::uint32_t>(flow.value & 0xffffffffu);
  const auto generation = static_cast<std::uint32_t>(flow.value >> 32);
  if (slot >= flows_.size()) return BytesPerSecond(0.0);
  const FlowRecord& rec = flows_[slot];
  if (!rec.active || rec.generation != generation) return BytesPerSecond(0.0);
  double rate = 0.0;
  for (std::uint32_t p = rec.first_part; p != kNone; p = parts_[p].next) {
    if (parts_[p].cls != kNone) rate += hot_[parts_[p].cls].rate;
  }
  return BytesPerSecond(rate);
}

void FlowNetwork::settle_link(std::uint32_t link, std::int64_t now_ps) {
  const std::int64_t dt = now_ps - link_settled_ps_[link];
  if (dt > 0) {
    const double bytes = link_load_[link] * (static_cast<double>(dt) * kSecondsPerPs);
    link_bytes_[link] += bytes;
    link_lifetime_bytes_[link] += bytes;
    if (link_load_[link] > 0.0) link_busy_ps_[link] += dt;
    link_settled_ps_[link] = now_ps;
  }
}

bool FlowNetwork::depart_needs_solve(std::uint32_t cls, std::uint32_t departed,
                                     std::int64_t now_ps) {
  const double freed = static_cast<double>(departed) * hot_[cls].rate;
  bool needs = false;
  const std::span<const std::uint32_t> links = path(cls);
  for (std::size_t i = 0; i < links.size(); ++i) {
    const std::uint32_t l = links[i];
    settle_link(l, now_ps);
    const double old_load = link_load_[l];
    link_load_[l] = std::max(old_load - freed * share(cls, i), 0.0);
    // (A flow that arrived this instant may drain before the solve counted it.)
    link_flows_[l] -= std::min(departed, link_flows_[l]);
    record_sample(l, now_ps, old_load);
    if (link_saturated_[l] != 0 &&
        link_capacity_[l] - link_load_[l] > options_.idle_tolerance * link_capacity_[l]) {
      needs = true;
    }
  }
  return needs;
}

void FlowNetwork::record_sample(std::uint32_t l, std::int64_t now_ps, double old_load) {
  if (link_sampled_[l] == 0 ||
      std::fabs(link_load_[l] - old_load) <= kRateChangeTolerance * link_capacity_[l]) {
    return;
  }
  std::vector<UtilizationSample>& samples = link_samples_[l];
  const UtilizationSample sample{Time::ps(now_ps), link_load_[l] / link_capacity_[l]};
  if (!samples.empty() && samples.back().time == sample.time) {
    samples.back() = sample;
  } else {
    samples.push_back(sample);
  }
}

void FlowNetwork::on_instant_end() {
  solve();
}

void FlowNetwork::solve() {
  solve_requested_ = false;
  // Which classes keep their rates. Progressive filling freezes flows in increasing order of rate.
  // When flows only leave (no arrival this instant), let r be the smallest rate of a departed flow.
  // Below level r the departed flows were still unfrozen in the old filling, so no link they
  // cross saturated below r (it would have frozen them there); removing them only lowers the load
  // of such links at every level. The links that saturated below r carry no departed flow and see
  // the same frozen set at each level, so they saturate at the same levels again: every class with
  // a rate below r keeps it exactly. Those classes are fixed (their load is taken off the link
  // capacities) and only the classes at r or above are re-solved, which is the same progressive
  // filling from level r on. A relative margin keeps classes that floating point puts a hair below
  // r in the re-solved set. An arrival can lower any rate: then nothing is fixed.
  const double fixed_below =
      (options_.full_resolve || instant_has_arrival_ || !std::isfinite(instant_min_departed_rate_))
          ? 0.0
          : instant_min_departed_rate_ * (1.0 - kFixedRateMargin);
  instant_has_arrival_ = false;
  instant_min_departed_rate_ = std::numeric_limits<double>::infinity();
  if (dirty_.empty()) return;
  const std::int64_t now_ps = sim_.now().picoseconds();
  ++solves_;
  ++stamp_;
  comp_links_.clear();
  comp_classes_.clear();
  local_fixed_load_.clear();
  local_fixed_count_.clear();

  // The component to re-solve. Max-min rates couple flows only through saturated links: a flow's
  // rate is set by a saturated link where it has the largest rate (its bottleneck). So the search
  // goes from the changed classes' links through the saturated links only (as of the last solve):
  // link -> its active classes -> their links. A link the search reaches but does not cross (it
  // had spare capacity) joins the problem as a boundary link, with the capacity that the classes
  // outside the component leave on it. After the solve, a boundary link that the new rates fill
  // joins the search (its classes may now be bottlenecked by component classes) and the solve is
  // repeated; when none fills, every class outside keeps its rate exactly (its bottleneck link
  // holds no component class, and no link it crosses went over capacity) and the component's
  // rates are max-min fair given them. A fixed class (below `fixed_below`) passes no change on.
  auto visit_link = [&](std::uint32_t l, bool cross) {
    if (link_mark_[l] != stamp_) {
      link_mark_[l] = stamp_;
      link_local_[l] = static_cast<std::uint32_t>(comp_links_.size());
      comp_links_.push_back(l);
      comp_crossed_.push_back(cross ? 1 : 0);
      local_fixed_load_.push_back(0.0);
      local_fixed_count_.push_back(0);
      if (cross) scan_queue_.push_back(l);
    }
  };
  auto saturated = [&](std::uint32_t l) {
    return link_load_[l] >= link_capacity_[l] * (1.0 - kSaturatedMargin);
  };
  comp_crossed_.clear();
  scan_queue_.clear();
  // The component's classes as a problem with local indices, built as the search finds them (a
  // class's links are visited, so numbered, before its path is written).
  local_flows_.clear();
  local_offsets_.assign(1, 0);
  local_path_.clear();
  local_share_.clear();
  bool comp_sprayed = false;  // local_share_ is filled from the first sprayed class on
  if (options_.full_resolve) {
    for (std::uint32_t l = 0; l < link_capacity_.size(); ++l)
      visit_link(l, true);
  } else {
    for (const std::uint32_t d : dirty_) {
      for (const std::uint32_t l : path(d))
        visit_link(l, true);
    }
  }
  bool released = false;
  for (;;) {
    for (std::size_t q = 0; q < scan_queue_.size(); ++q) {
      const std::uint32_t j = link_local_[scan_queue_[q]];
      const std::vector<std::uint32_t>& on_link = link_classes_[scan_queue_[q]];
      const std::vector<double>& shares_on_link = link_shares_[scan_queue_[q]];
      for (std::size_t k = 0; k < on_link.size(); ++k) {
        if (k + kPrefetchAhead < on_link.size()) prefetch(&hot_[on_link[k + kPrefetchAhead]]);
        const std::uint32_t cls = on_link[k];
        ClassHot& c = hot_[cls];
        if (c.mark == stamp_) continue;
        if (c.rate > 0.0 && c.rate < fixed_below) {  // the only classes a crossed link leaves out
          local_fixed_load_[j] += static_cast<double>(c.flows) * c.rate * shares_on_link[k];
          local_fixed_count_[j] += c.flows;
          continue;
        }
        c.mark = stamp_;
        comp_classes_.push_back(cls);
        local_flows_.push_back(c.flows);
        if (sprayed(c) && !comp_sprayed) {
          comp_sprayed = true;
          local_share_.assign(local_path_.size(), 1.0);
        }
        const std::span<const std::uint32_t> links = path(cls);
        for (std::size_t i = 0; i < links.size(); ++i) {
          const std::uint32_t l = links[i];
          // (Most links are met again; the saturation test is only for the first meeting.)
          if (link_mark_[l] != stamp_) visit_link(l, saturated(l));
          local_path_.push_back(link_local_[l]);
          if (comp_sprayed) local_share_.push_back(share(cls, i));
        }
        local_offsets_.push_back(static_cast<std::uint32_t>(local_path_.size()));
      }
    }
    scan_queue_.clear();
    if (!released) {
      released = true;
      for (const std::uint32_t d : dirty_) {
        classes_[d].dirty = false;
        if (hot_[d].flows == 0 && classes_[d].in_use) release_class(d);
      }
      dirty_.clear();
    }

    // Each link's capacity less the load of the classes outside the component: the fixed ones on
    // crossed links (summed by the search), any on boundary links (summed here, again after each
    // growth of the component).
    const std::size_t nl = comp_links_.size();
    const std::size_t nc = comp_classes_.size();
    local_capacity_.resize(nl);
    for (std::size_t j = 0; j < nl; ++j) {
      if (comp_crossed_[j] == 0) {
        local_fixed_load_[j] = 0.0;
        local_fixed_count_[j] = 0;
        const std::vector<std::uint32_t>& on_link = link_classes_[comp_links_[j]];
        const std::vector<double>& shares_on_link = link_shares_[comp_links_[j]];
        for (std::size_t k = 0; k < on_link.size(); ++k) {
          if (k + kPrefetchAhead < on_link.size()) prefetch(&hot_[on_link[k + kPrefetchAhead]]);
          const ClassHot& c = hot_[on_link[k]];
          if (c.mark == stamp_) continue;
          local_fixed_load_[j] += static_cast<double>(c.flows) * c.rate * shares_on_link[k];
          local_fixed_count_[j] += c.flows;
        }
      }
      local_capacity_[j] = std::max(link_capacity_[comp_links_[j]] - local_fixed_load_[j], 0.0);
    }
    local_rate_.resize(nc);
    classes_solved_ += nc;
    solver_.solve(local_capacity_, local_flows_, local_offsets_, local_path_, local_share_,
                  local_rate_);

    // Boundary links the new rates fill join the search.
    local_load_.assign(local_fixed_load_.begin(), local_fixed_load_.end());
    for (std::size_t i = 0; i < nc; ++i) {
      const double class_load = static_cast<double>(local_flows_[i]) * local_rate_[i];
      for (std::uint32_t k = local_offsets_[i]; k < local_offsets_[i + 1]; ++k)
        local_load_[local_path_[k]] += comp_sprayed ? class_load * local_share_[k] : class_load;
    }
    for (std::size_t j = 0; j < nl; ++j) {
      if (comp_crossed_[j] != 0) continue;
      const std::uint32_t l = comp_links_[j];
      if (local_load_[j] >= link_capacity_[l] * (1.0 - kSaturatedMargin)) {
        comp_crossed_[j] = 1;
        local_fixed_load_[j] = 0.0;  // the search sums its fixed classes when it crosses it
        local_fixed_count_[j] = 0;
        scan_queue_.push_back(l);
      }
    }
    if (scan_queue_.empty()) break;
    ++boundary_expansions_;
  }
  const std::size_t nl = comp_links_.size();
  const std::size_t nc = comp_classes_.size();

  // Apply the rates; classes whose rate did not really change keep their drain ends. When the
  // component holds a large part of the draining classes, the drain heap is rebuilt once (linear)
  // instead of sifting each changed class (the order is total, so the same class comes first).
  const bool rebuild_heap = nc >= 1024 && 4 * nc >= drain_heap_.size();
  local_load_.assign(local_fixed_load_.begin(), local_fixed_load_.end());
  local_count_.assign(local_fixed_count_.begin(), local_fixed_count_.end());
  for (std::size_t i = 0; i < nc; ++i) {
    if (i + kPrefetchAhead < nc) {
      prefetch(&hot_[comp_classes_[i + kPrefetchAhead]]);
      prefetch(&drain_[comp_classes_[i + kPrefetchAhead]]);
    }
    const std::uint32_t cls = comp_classes_[i];
    ClassHot& h = hot_[cls];
    const double rate = local_rate_[i];
    if (h.rate == 0.0 || std::fabs(rate - h.rate) > kRateChangeTolerance * h.rate) {
      settle_class(cls, now_ps);
      h.rate = rate;
      if (rebuild_heap) {
        ClassDrain& d = drain_[cls];
        const std::int64_t end_ps = drain_end_ps(cls);
        if (d.heap_pos == kNone) {
          d.heap_pos = static_cast<std::uint32_t>(drain_heap_.size());
          drain_heap_.push_back({end_ps, cls});
        } else {
          drain_heap_[d.heap_pos].end_ps = end_ps;
        }
      } else {
        update_drain_end(cls);
      }
      ++rate_updates_;
    }
    const double class_load = static_cast<double>(h.flows) * h.rate;
    for (std::uint32_t k = local_offsets_[i]; k < local_offsets_[i + 1]; ++k) {
      local_load_[local_path_[k]] += comp_sprayed ? class_load * local_share_[k] : class_load;
      local_count_[local_path_[k]] += h.flows;
    }
  }
  if (rebuild_heap) {
    for (std::size_t pos = drain_heap_.size() / 2; pos-- > 0;)
      heap_sift_down(static_cast<std::uint32_t>(pos));
  }
  for (std::size_t j = 0; j < nl; ++j) {
    const std::uint32_t l = comp_links_[j];
    settle_link(l, now_ps);
    const double old_load = link_load_[l];
    link_load_[l] = local_load_[j];
    link_flows_[l] = local_count_[j];
    link_peak_flows_[l] = std::max(link_peak_flows_[l], local_count_[j]);
    link_saturated_[l] = local_load_[j] >= link_capacity_[l] * (1.0 - kSaturatedMargin) ? 1 : 0;
    record_sample(l, now_ps, old_load);
  }
  reschedule_drain_event();
#ifndef NDEBUG
  check_invariants();
#endif
}

LinkStatistics FlowNetwork::link_statistics(LinkId link) const {
  const std::uint32_t l = link.value;
  const std::int64_t now_ps = sim_.now().picoseconds();
  const std::int64_t dt = now_ps - link_settled_ps_[l];
  LinkStatistics s;
  s.bytes_carried = link_bytes_[l] + link_load_[l] * (static_cast<double>(dt) * kSecondsPerPs);
  s.busy_time = Time::ps(link_busy_ps_[l] + (link_load_[l] > 0.0 ? dt : 0));
  const std::int64_t window_ps = now_ps - window_start_ps_;
  s.utilization =
      window_ps > 0
          ? s.bytes_carried / (link_capacity_[l] * static_cast<double>(window_ps) * kSecondsPerPs)
          : 0.0;
  s.peak_flows = link_peak_flows_[l];
  return s;
}

void FlowNetwork::restart_statistics() {
  const std::int64_t now_ps = sim_.now().picoseconds();
  for (std::uint32_t l = 0; l < link_capacity_.size(); ++l) {
    settle_link(l, now_ps);
    link_bytes_[l] = 0.0;
    link_busy_ps_[l] = 0;
    link_peak_flows_[l] = link_flows_[l];
    link_samples_[l].clear();
  }
  window_start_ps_ = now_ps;
}

std::span<const UtilizationSample> FlowNetwork::utilization_samples(LinkId link) const {
  return link_samples_[link.value];
}

void FlowNetwork::check_invariants() const {
  const std::int64_t now_ps = sim_.now().picoseconds();
  const bool solved = dirty_.empty();
  // Deferred departures (idle_tolerance) update the link loads at once; arrivals wait for the
  // solve that ends their instant.
  const bool loads_current = solved || (options_.idle_tolerance > 0.0 && !solve_requested_);
  auto where = [](const char* what, std::size_t index) {
    return std::string(what) + " " + std::to_string(index);
  };

  double link_total = 0.0;
  for (std::size_t l = 0; l < link_capacity_.size(); ++l) {
    double load = 0.0;
    if (link_shares_[l].size() != link_classes_[l].size())
      broken(where("class shares out of step with the classes on link", l));
    for (std::size_t k = 0; k < link_classes_[l].size(); ++k) {
      const std::uint32_t cls = link_classes_[l][k];
      const ClassHot& h = hot_[cls];
      if (h.flows == 0 || !classes_[cls].in_use) broken(where("inactive class listed on link", l));
      load += static_cast<double>(h.flows) * h.rate * link_shares_[l][k];
    }
    const double cap = link_capacity_[l];
    if (loads_current && std::fabs(load - link_load_[l]) > 1e-9 * cap) {
      broken(where("load differs from the sum of its flows' rates on link", l));
    }
    if (link_load_[l] > cap * (1.0 + 1e-9)) {
      broken(where("load above bandwidth on link", l) + ": " + std::to_string(link_load_[l]) +
             " > " + std::to_string(cap) + " B/s");
    }
    const double dt = static_cast<double>(now_ps - link_settled_ps_[l]) * kSecondsPerPs;
    link_total += link_lifetime_bytes_[l] + link_load_[l] * dt;
  }

  double flow_total = finished_link_bytes_;
  std::size_t in_heap = 0;
  for (std::size_t cls = 0; cls < classes_.size(); ++cls) {
    const FlowClass& c = classes_[cls];
    const ClassHot& h = hot_[cls];
    const ClassDrain& d = drain_[cls];
    if (!c.in_use || h.flows == 0) continue;
    if (!(h.rate >= 0.0) || !std::isfinite(h.rate)) broken(where("bad rate in class", cls));
    if (solved && !(h.rate > 0.0)) broken(where("draining class without a rate", cls));
    if (c.targets.size() != h.flows) broken(where("flow count mismatch in class", cls));
    if (path(static_cast<std::uint32_t>(cls)).size() != c.slot_in_link.size()) {
      broken(where("path length mismatch in class", cls));
    }
    if (h.rate > 0.0) {
      if (d.heap_pos == kNone || drain_heap_[d.heap_pos].cls != cls) {
        broken(where("draining class missing from the drain heap", cls));
      }
      ++in_heap;
    }
    if (c.targets.front().first != d.first_target)
      broken(where("stale first target in class", cls));
    const double drained =
        d.drained + h.rate * static_cast<double>(now_ps - d.settled_ps) * kSecondsPerPs;
    for (const auto& [target, p] : c.targets) {
      const Part& part = parts_[p];
      const double remaining = target - drained;
      const double slack = 1e-9 * part.bytes + 1e-6;
      if (part.cls != cls) broken(where("part not in its class", p));
      if (remaining < -slack || remaining > part.bytes + slack) {
        broken(where("remaining bytes out of range for part", p) + ": " +
               std::to_string(remaining) + " of " + std::to_string(part.bytes));
      }
      flow_total += (part.bytes - remaining) * c.link_bytes_per_byte;
    }
  }
  if (in_heap != drain_heap_.size()) broken("drain heap holds classes that are not draining");
  if (!drain_heap_.empty() && !sim_.pending(drain_event_)) {
    broken("flows are draining but no drain event is scheduled");
  }
  if (std::fabs(link_total - flow_total) >
      1e-9 * std::max(link_total, flow_total) + rounding_link_bytes_ + 1e-3) {
    broken("bytes not conserved: links carried " + std::to_string(link_total) +
           " link-bytes, flows drained " + std::to_string(flow_total));
  }
}

void FlowNetwork::heap_place(std::uint32_t cls, std::int64_t end_ps) {
  ClassDrain& d = drain_[cls];
  if (d.heap_pos == kNone) {
    d.heap_pos = static_cast<std::uint32_t>(drain_heap_.size());
    drain_heap_.push_back({end_ps, cls});
    heap_sift_up(d.heap_pos);
  } else {
    drain_heap_[d.heap_pos].end_ps = end_ps;
    heap_sift_up(d.heap_pos);
    heap_sift_down(drain_[cls].heap_pos);
  }
}

void FlowNetwork::heap_remove(std::uint32_t cls) {
  const std::uint32_t pos = drain_[cls].heap_pos;
  if (pos == kNone) return;
  const DrainEntry last = drain_heap_.back();
  drain_heap_.pop_back();
  drain_[cls].heap_pos = kNone;
  if (last.cls != cls) {
    drain_heap_[pos] = last;
    drain_[last.cls].heap_pos = pos;
    heap_sift_up(pos);
    heap_sift_down(drain_[last.cls].heap_pos);
  }
}

void FlowNetwork::heap_sift_up(std::uint32_t pos) {
  const DrainEntry e = drain_heap_[pos];
  while (pos > 0) {
    const std::uint32_t parent = (pos - 1) / 2;
    if (!e.before(drain_heap_[parent])) break;
    drain_heap_[pos] = drain_heap_[parent];
    drain_[drain_heap_[pos].cls].heap_pos = pos;
    pos = parent;
  }
  drain_heap_[pos] = e;
  drain_[e.cls].heap_pos = pos;
}

void FlowNetwork::heap_sift_down(std::uint32_t pos) {
  const DrainEntry e = drain_heap_[pos];
  const auto n = static_cast<std::uint32_t>(drain_heap_.size());
  for (;;) {
    std::uint32_t child = 2 * pos + 1;
    if (child >= n) break;
    if (child + 1 < n && drain_heap_[child + 1].before(drain_heap_[child])) ++child;
    if (!drain_heap_[child].before(e)) break;
    drain_heap_[pos] = drain_heap_[child];
    drain_[drain_heap_[pos].cls].heap_pos = pos;
    pos = child;
  }
  drain_heap_[pos] = e;
  drain_[e.cls].heap_pos = pos;
}

}  // namespace stepsim::engine
