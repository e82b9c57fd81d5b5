#include "sim/engine/flow_network.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <bit>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include "sim/common/input_error.hpp"
#include "sim/engine/drain_time.hpp"
#include "sim/engine/flow_network_state.hpp"

namespace stepsim::engine {

using namespace detail;  // the flow network's internals (flow_tables.hpp and the like)

namespace {

// A re-solve that moves a rate by less than this (relative) keeps the old rate, so that classes
// the change did not really affect keep their scheduled drain ends.
constexpr double kRateChangeTolerance = 1e-12;

std::uint64_t hash_path(std::span<const LinkId> path, std::span<const double> shares) {
  // FNV-1a over the link indices (and a sprayed path's shares), then a final mix; collisions are
  // resolved by comparing paths.
  std::uint64_t h = 1469598103934665603ull;
  for (const LinkId l : path) {
    h ^= l.value();
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

std::vector<std::uint32_t> sorted(std::vector<std::uint32_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// FlowNetwork: forwards to its State.

FlowNetwork::FlowNetwork(Simulator& simulator, FlowNetworkOptions options)
    : state_(std::make_unique<State>(simulator, std::move(options))) {}

FlowNetwork::~FlowNetwork() = default;

LinkId FlowNetwork::add_link(BytesPerSecond bandwidth, Time latency) {
  return state_->add_link(bandwidth, latency);
}
std::size_t FlowNetwork::link_count() const {
  return state_->tables_.link_capacity.size();
}
BytesPerSecond FlowNetwork::bandwidth(LinkId link) const {
  return BytesPerSecond(state_->tables_.link_capacity[link.value()]);
}
Time FlowNetwork::latency(LinkId link) const {
  return state_->link_latency_[link.value()];
}

FlowId FlowNetwork::start_flow(std::int64_t source, std::int64_t destination, Bytes bytes,
                               std::span<const LinkId> path, FlowCallback on_done) {
  const WeightedPath one{path, 1.0};
  return state_->start_flow(source, destination, bytes, std::span<const WeightedPath>(&one, 1),
                            std::move(on_done));
}
FlowId FlowNetwork::start_flow(std::int64_t source, std::int64_t destination, Bytes bytes,
                               std::span<const WeightedPath> paths, FlowCallback on_done) {
  return state_->start_flow(source, destination, bytes, paths, std::move(on_done));
}
FlowId FlowNetwork::start_flow(std::int64_t source, std::int64_t destination, Bytes bytes,
                               std::span<const LinkId> path, BytesPerSecond rate_cap,
                               FlowCallback on_done) {
  const WeightedPath one{path, 1.0};
  return state_->start_flow(source, destination, bytes, std::span<const WeightedPath>(&one, 1),
                            std::move(on_done), rate_cap.value());
}
FlowId FlowNetwork::start_sprayed_flow(std::int64_t source, std::int64_t destination, Bytes bytes,
                                       std::span<const LinkShare> links, Time latency,
                                       FlowCallback on_done) {
  return state_->start_sprayed_flow(source, destination, bytes, links, latency, std::move(on_done));
}
FlowId FlowNetwork::start_sprayed_flow(std::int64_t source, std::int64_t destination, Bytes bytes,
                                       std::span<const LinkShare> links, Time latency,
                                       BytesPerSecond rate_cap, FlowCallback on_done) {
  return state_->start_sprayed_flow(source, destination, bytes, links, latency, std::move(on_done),
                                    rate_cap.value());
}

void FlowNetwork::set_link_aliases(std::span<const LinkId> representative) {
  state_->set_link_aliases(representative);
}

void FlowNetwork::keep_representatives(std::vector<LinkShare>& links) {
  state_->sort_links(links);
  if (state_->alias_.empty()) {
    links.assign(state_->sorted_links_.begin(), state_->sorted_links_.end());
    return;
  }
  state_->keep_representatives(state_->path_scratch_, state_->share_scratch_);
  links.clear();
  for (std::size_t i = 0; i < state_->path_scratch_.size(); ++i)
    links.push_back({state_->path_scratch_[i], state_->share_scratch_[i]});
}

std::size_t FlowNetwork::active_flows() const {
  return state_->active_flows_;
}
BytesPerSecond FlowNetwork::current_rate(FlowId flow) const {
  return state_->current_rate(flow);
}
BytesPerSecond FlowNetwork::load(LinkId link) const {
  return BytesPerSecond(state_->tables_.link_load[state_->stands_for(link)]);
}
LinkStatistics FlowNetwork::link_statistics(LinkId link) const {
  return state_->link_statistics(link);
}
void FlowNetwork::restart_statistics() {
  state_->restart_statistics();
}
std::span<const UtilizationSample> FlowNetwork::utilization_samples(LinkId link) const {
  return state_->stats_.samples(state_->stands_for(link));
}
std::uint64_t FlowNetwork::solves() const {
  return state_->max_min_.solves();
}
std::uint64_t FlowNetwork::rate_updates() const {
  return state_->rate_updates_;
}
std::uint64_t FlowNetwork::classes_solved() const {
  return state_->max_min_.classes_solved();
}
std::uint64_t FlowNetwork::deferred_departures() const {
  return state_->deferred_departures_;
}
std::uint64_t FlowNetwork::boundary_expansions() const {
  return state_->max_min_.boundary_expansions();
}
std::uint64_t FlowNetwork::twin_classes() const {
  return state_->max_min_.twin_classes();
}
std::uint64_t FlowNetwork::boundary_estimates() const {
  return state_->max_min_.boundary_estimates();
}
std::uint64_t FlowNetwork::boundary_estimates_refused() const {
  return state_->max_min_.boundary_estimates_refused();
}
std::uint64_t FlowNetwork::kept_at_arrivals() const {
  return state_->max_min_.kept_at_arrivals();
}
void FlowNetwork::check_invariants() const {
  state_->check_invariants();
}

// ---------------------------------------------------------------------------------------------
// Links and starting flows.

FlowNetwork::State::State(Simulator& simulator, FlowNetworkOptions options)
    : sim_(simulator),
      options_(std::move(options)),
      stats_(simulator.now().picoseconds(), options_.record_utilization_samples,
             sorted(options_.sampled_links)) {
  if (!(options_.idle_tolerance >= 0.0 && options_.idle_tolerance < 1.0)) {
    throw std::invalid_argument("FlowNetwork: idle_tolerance must be in [0, 1), got " +
                                std::to_string(options_.idle_tolerance));
  }
}

FlowNetwork::State::~State() {
  sim_.cancel(drain_event_);
}

LinkId FlowNetwork::State::add_link(BytesPerSecond bandwidth, Time latency) {
  if (!(bandwidth.value() > 0.0) || !std::isfinite(bandwidth.value())) {
    throw std::invalid_argument(
        "FlowNetwork::add_link: bandwidth must be positive and finite, got " +
        std::to_string(bandwidth.value()) + " B/s");
  }
  if (latency < Time::zero()) {
    throw std::invalid_argument("FlowNetwork::add_link: latency must not be negative, got " +
                                std::to_string(latency.picoseconds()) + " ps");
  }
  const auto id = static_cast<std::uint32_t>(tables_.link_capacity.size());
  tables_.link_capacity.push_back(bandwidth.value());
  tables_.link_classes.emplace_back();
  tables_.link_shares.emplace_back();
  tables_.link_load.push_back(0.0);
  tables_.link_flows.push_back(0);
  tables_.link_unsolved.push_back(0.0);
  link_latency_.push_back(latency);
  link_saturated_.push_back(0);
  stats_.add_link(sim_.now().picoseconds());
  max_min_.add_link();
  if (!alias_.empty()) {  // a link added after the aliases has none
    alias_.push_back(id);
    alias_members_.push_back(1);
    alias_seen_.push_back(0);
    alias_share_.push_back(0.0);
  }
  return LinkId{id};
}

FlowId FlowNetwork::State::start_flow(std::int64_t source, std::int64_t destination, Bytes bytes,
                                      std::span<const WeightedPath> paths, FlowCallback on_done,
                                      double rate_cap) {
  if (paths.empty()) throw std::invalid_argument("FlowNetwork::start_flow: no path given");
  if (bytes < Bytes(0)) throw std::invalid_argument("FlowNetwork::start_flow: negative size");
  check_cap(rate_cap);
  double total_weight = 0.0;
  for (const WeightedPath& p : paths) {
    if (!(p.weight > 0.0) || !std::isfinite(p.weight)) {
      throw std::invalid_argument("FlowNetwork::start_flow: path weight must be positive, got " +
                                  std::to_string(p.weight));
    }
    total_weight += p.weight;
    for (const LinkId l : p.links) {
      if (l.value() >= tables_.link_capacity.size()) {
        throw std::invalid_argument("FlowNetwork::start_flow: unknown link " +
                                    std::to_string(l.value()));
      }
      if (!alias_.empty() && alias_members_[alias_[l.value()]] > 1) {
        throw std::logic_error("FlowNetwork::start_flow: a flow on one path crosses link " +
                               std::to_string(l.value()) +
                               " of a group of aliased links, whose members every flow must "
                               "load alike (bug in the caller's aliases)");
      }
    }
  }

  const Time now = sim_.now();
  const std::uint32_t f = start_record(source, destination, bytes, std::move(on_done));
  for (const WeightedPath& p : paths) {
    const double part_bytes =
        paths.size() == 1 ? bytes.as_double() : bytes.as_double() * (p.weight / total_weight);
    if (part_bytes > 0.0 && !p.links.empty()) {
      add_part(f, p.links, part_bytes, {}, Time::zero(), rate_cap);
    } else {
      Time latency = Time::zero();
      for (const LinkId l : p.links)
        latency += link_latency_[l.value()];
      flows_[f].finish = std::max(flows_[f].finish, now + latency);
    }
  }
  return finish_start(f);
}

FlowId FlowNetwork::State::start_sprayed_flow(std::int64_t source, std::int64_t destination,
                                              Bytes bytes, std::span<const LinkShare> links,
                                              Time latency, FlowCallback on_done, double rate_cap) {
  if (bytes < Bytes(0)) throw std::invalid_argument("FlowNetwork::start_flow: negative size");
  check_cap(rate_cap);
  if (latency < Time::zero())
    throw std::invalid_argument("FlowNetwork::start_sprayed_flow: negative latency");
  sort_links(links);
  if (!alias_.empty()) keep_representatives(path_scratch_, share_scratch_);
  const std::uint32_t f = start_record(source, destination, bytes, std::move(on_done));
  if (bytes > Bytes(0) && !path_scratch_.empty()) {
    add_part(f, path_scratch_, bytes.as_double(), share_scratch_, latency, rate_cap);
  } else {
    flows_[f].finish = sim_.now() + latency;
  }
  return finish_start(f);
}

void FlowNetwork::State::check_cap(double rate_cap) {
  if (!(rate_cap > 0.0))
    throw std::invalid_argument("FlowNetwork::start_flow: a rate cap must be positive, got " +
                                std::to_string(rate_cap));
}

void FlowNetwork::State::sort_links(std::span<const LinkShare> links) {
  // The class keeps its links in increasing order: the same set given in another order is the
  // same class, and a link's place in the path is found by bisection. (Input already in order,
  // each link once, as keep_representatives leaves it, skips the sort.)
  sorted_links_.assign(links.begin(), links.end());
  const auto before = [](const LinkShare& a, const LinkShare& b) {
    return a.link.value() < b.link.value();
  };
  if (!std::is_sorted(sorted_links_.begin(), sorted_links_.end(), before))
    std::sort(sorted_links_.begin(), sorted_links_.end(), before);
  path_scratch_.clear();
  share_scratch_.clear();
  for (const LinkShare& l : sorted_links_) {
    if (l.link.value() >= tables_.link_capacity.size()) {
      throw std::invalid_argument("FlowNetwork::start_sprayed_flow: unknown link " +
                                  std::to_string(l.link.value()));
    }
    if (!(l.share > 0.0) || !std::isfinite(l.share)) {
      throw std::invalid_argument("FlowNetwork::start_sprayed_flow: share must be positive, got " +
                                  std::to_string(l.share));
    }
    if (!path_scratch_.empty() && path_scratch_.back() == l.link) {
      share_scratch_.back() += l.share;
      continue;
    }
    path_scratch_.push_back(l.link);
    share_scratch_.push_back(l.share);
  }
}

void FlowNetwork::State::set_link_aliases(std::span<const LinkId> representative) {
  if (!flows_.empty() || !tables_.classes.empty())
    throw std::logic_error("FlowNetwork::set_link_aliases: flows have started (bug)");
  const std::size_t links = tables_.link_capacity.size();
  if (representative.empty()) {
    alias_.clear();
    return;
  }
  if (representative.size() != links) {
    throw std::invalid_argument(
        "FlowNetwork::set_link_aliases: " + std::to_string(representative.size()) +
        " entries for " + std::to_string(links) + " links");
  }
  std::vector<std::uint32_t> alias(links);
  std::vector<std::uint32_t> members(links, 0);
  for (std::uint32_t l = 0; l < links; ++l) {
    const std::uint32_t r = representative[l].value();
    if (r > l || representative[r].value() != r ||
        tables_.link_capacity[r] != tables_.link_capacity[l]) {
      throw std::invalid_argument(
          "FlowNetwork::set_link_aliases: link " + std::to_string(l) + " has representative " +
          std::to_string(r) +
          ", which must be a lower or equal index, its own representative and as fast");
    }
    alias[l] = r;
    ++members[r];
  }
  alias_ = std::move(alias);
  alias_members_ = std::move(members);
  alias_seen_.assign(links, 0);
  alias_share_.assign(links, 0.0);
  // A member's samples are its representative's: record them when any member is sampled.
  for (std::uint32_t l = 0; l < links; ++l) {
    if (stats_.sampled(l)) stats_.sample(alias_[l]);
  }
}

void FlowNetwork::State::keep_representatives(std::vector<LinkId>& path,
                                              std::vector<double>& shares) {
  std::uint32_t bad = detail::kNone;
  for (std::size_t i = 0; i < path.size(); ++i) {
    const std::uint32_t r = alias_[path[i].value()];
    if (alias_members_[r] == 1) continue;
    if (alias_seen_[r]++ == 0) {
      alias_share_[r] = shares[i];
    } else if (alias_share_[r] != shares[i]) {
      bad = path[i].value();
    }
  }
  std::size_t kept = 0;
  for (std::size_t i = 0; i < path.size(); ++i) {
    const std::uint32_t l = path[i].value(), r = alias_[l];
    if (alias_members_[r] != 1) {
      // Every member, or the representative alone (keep_representatives' output).
      if (alias_seen_[r] != 0 && alias_seen_[r] != alias_members_[r] &&
          !(alias_seen_[r] == 1 && l == r))
        bad = l;
      alias_seen_[r] = 0;
      if (r != l) continue;
    }
    path[kept] = path[i];
    shares[kept] = shares[i];
    ++kept;
  }
  // (A group whose representative is missing left no entry, and its count was checked.)
  if (bad != detail::kNone) {
    // (The scratch is back at 0: every group met was reset above.)
    throw std::logic_error("FlowNetwork::start_sprayed_flow: link " + std::to_string(bad) +
                           " is aliased, but the flow does not load every link of its group with "
                           "the same share (bug in the caller's aliases)");
  }
  path.resize(kept);
  shares.resize(kept);
}

std::uint32_t FlowNetwork::State::start_record(std::int64_t source, std::int64_t destination,
                                               Bytes bytes, FlowCallback on_done) {
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

FlowId FlowNetwork::State::finish_start(std::uint32_t f) {
  FlowRecord& rec = flows_[f];
  if (rec.parts_left == 0) {
    sim_.schedule_at(rec.finish, [this, f] { deliver(f); });
  }
  return FlowId{(static_cast<std::uint64_t>(rec.generation) << 32) | f};
}

std::uint32_t FlowNetwork::State::acquire_flow() {
  if (!free_flows_.empty()) {
    const std::uint32_t f = free_flows_.back();
    free_flows_.pop_back();
    return f;
  }
  flows_.emplace_back();
  return static_cast<std::uint32_t>(flows_.size() - 1);
}

std::uint32_t FlowNetwork::State::acquire_part() {
  if (!free_parts_.empty()) {
    const std::uint32_t p = free_parts_.back();
    free_parts_.pop_back();
    return p;
  }
  parts_.emplace_back();
  return static_cast<std::uint32_t>(parts_.size() - 1);
}

void FlowNetwork::State::add_part(std::uint32_t flow, std::span<const LinkId> path, double bytes,
                                  std::span<const double> shares, Time latency, double rate_cap) {
  const std::uint32_t p = acquire_part();
  const std::uint32_t cls = find_or_create_class(path, shares, latency, rate_cap);
  FlowClass& c = tables_.classes[cls];
  ClassHot& h = tables_.hot[cls];
  const std::int64_t now_ps = sim_.now().picoseconds();
  settle_class(cls, now_ps);
  ClassDrain& d = tables_.drain[cls];
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

  if (h.flows == 0) activate_class(cls);
  ++h.flows;
  if (FlowTables::sprayed(h)) ++tables_.sprayed_flows;
  const std::span<const std::uint32_t> links = tables_.path(cls);
  for (std::size_t i = 0; i < links.size(); ++i) {
    ++tables_.link_flows[links[i]];
    if (options_.idle_tolerance == 0.0)
      tables_.link_unsolved[links[i]] -= h.rate * tables_.share(cls, i);
  }
  max_min_.note_arrival(cls);
  mark_dirty(cls);
  if (h.rate > 0.0) {
    // Already draining at a solved rate: the new flow may be the first to finish.
    update_drain_end(cls);
    reschedule_drain_event();
  }
}

// ---------------------------------------------------------------------------------------------
// Classes.

std::uint32_t FlowNetwork::State::find_or_create_class(std::span<const LinkId> path,
                                                       std::span<const double> shares, Time latency,
                                                       double rate_cap) {
  const bool spray = !shares.empty();
  std::uint64_t h = hash_path(path, shares) ^ (spray ? 0x5157a7edull : 0);
  if (rate_cap != kNoCap) h ^= std::bit_cast<std::uint64_t>(rate_cap) * 0x9e3779b97f4a7c15ull;
  std::uint32_t* const found = class_by_hash_.find(h);
  std::uint32_t head = kNone;
  if (found != nullptr) {
    head = *found;
    for (std::uint32_t c = head; c != kNone; c = tables_.classes[c].next_same_hash) {
      const std::span<const std::uint32_t> links = tables_.path(c);
      if (FlowTables::sprayed(tables_.hot[c]) == spray && tables_.rate_cap(c) == rate_cap &&
          links.size() == path.size() &&
          std::equal(path.begin(), path.end(), links.begin(),
                     [](LinkId a, std::uint32_t b) { return a.value() == b; }) &&
          (!spray || (std::equal(shares.begin(), shares.end(), tables_.classes[c].shares.begin()) &&
                      tables_.classes[c].latency == latency))) {
        return c;
      }
    }
  }
  const std::uint32_t cls = create_class(path, shares, latency, rate_cap, h, head);
  if (found != nullptr) {
    *found = cls;  // the classes may have grown, but the table did not move
  } else {
    class_by_hash_.insert(h, cls);
  }
  return cls;
}

std::uint32_t FlowNetwork::State::create_class(std::span<const LinkId> path,
                                               std::span<const double> shares, Time latency,
                                               double rate_cap, std::uint64_t h,
                                               std::uint32_t head) {
  const bool spray = !shares.empty();
  std::uint32_t cls;
  if (!free_classes_.empty()) {
    cls = free_classes_.back();
    free_classes_.pop_back();
  } else {
    cls = static_cast<std::uint32_t>(tables_.classes.size());
    tables_.classes.emplace_back();
    tables_.hot.emplace_back();
    tables_.drain.emplace_back();
  }
  FlowClass& c = tables_.classes[cls];
  ClassHot& hot = tables_.hot[cls];
  if (path.size() > kPathLengthMask)
    throw std::invalid_argument("FlowNetwork: a path of " + std::to_string(path.size()) + " links");
  const bool capped = rate_cap != kNoCap;
  hot.path_size = static_cast<std::uint32_t>(path.size()) | (spray ? kSprayedBit : 0) |
                  (capped ? kCappedBit : 0);
  hot.rate_cap = rate_cap;
  std::uint32_t* const links = !spray && path.size() <= kInlinePath ? hot.path : nullptr;
  c.long_path.clear();
  c.shares.assign(shares.begin(), shares.end());
  Time path_latency = Time::zero();
  for (std::size_t i = 0; i < path.size(); ++i) {
    if (links != nullptr) {
      links[i] = path[i].value();
    } else {
      c.long_path.push_back(path[i].value());
    }
    path_latency += link_latency_[path[i].value()];
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
  tables_.drain[cls] = ClassDrain{.drained = 0.0,
                                  .settled_ps = sim_.now().picoseconds(),
                                  .first_target = 0.0,
                                  .queue_ref = kNone,
                                  .queue_pos = 0};
  hot.flows = 0;
  c.next_same_hash = head;
  c.dirty = false;
  c.in_use = true;
  return cls;
}

void FlowNetwork::State::release_class(std::uint32_t cls) {
  FlowClass& c = tables_.classes[cls];
  std::uint32_t* const head = class_by_hash_.find(c.hash);
  if (*head == cls) {
    if (c.next_same_hash == kNone) {
      class_by_hash_.erase(c.hash);
    } else {
      *head = c.next_same_hash;
    }
  } else {
    std::uint32_t prev = *head;
    while (tables_.classes[prev].next_same_hash != cls)
      prev = tables_.classes[prev].next_same_hash;
    tables_.classes[prev].next_same_hash = c.next_same_hash;
  }
  c.in_use = false;
  c.next_same_hash = kNone;
  free_classes_.push_back(cls);
}

void FlowNetwork::State::activate_class(std::uint32_t cls) {
  FlowClass& c = tables_.classes[cls];
  const std::span<const std::uint32_t> links = tables_.path(cls);
  for (std::size_t i = 0; i < links.size(); ++i) {
    std::vector<std::uint32_t>& on_link = tables_.link_classes[links[i]];
    c.slot_in_link[i] = static_cast<std::uint32_t>(on_link.size());
    on_link.push_back(cls);
    tables_.link_shares[links[i]].push_back(tables_.share(cls, i));
  }
}

void FlowNetwork::State::deactivate_class(std::uint32_t cls) {
  // Swap-remove from each link's lists, fixing the slot of the class moved into the hole.
  FlowClass& c = tables_.classes[cls];
  const std::span<const std::uint32_t> links = tables_.path(cls);
  for (std::size_t i = 0; i < links.size(); ++i) {
    std::vector<std::uint32_t>& on_link = tables_.link_classes[links[i]];
    std::vector<double>& shares_on_link = tables_.link_shares[links[i]];
    const std::uint32_t slot = c.slot_in_link[i];
    const std::uint32_t moved = on_link.back();
    on_link[slot] = moved;
    on_link.pop_back();
    shares_on_link[slot] = shares_on_link.back();
    shares_on_link.pop_back();
    if (moved != cls || slot != on_link.size()) {
      FlowClass& m = tables_.classes[moved];
      const std::span<const std::uint32_t> moved_links = tables_.path(moved);
      if (FlowTables::sprayed(tables_.hot[moved])) {
        // A sprayed class lists each link once, in increasing order (start_sprayed_flow sorts
        // them), and may list hundreds: found by bisection.
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
}

void FlowNetwork::State::mark_dirty(std::uint32_t cls) {
  max_min_.mark_changed(cls);
  if (!solve_requested_) {
    solve_requested_ = true;
    sim_.request_instant_end(*this);
  }
}

// ---------------------------------------------------------------------------------------------
// Draining.

void FlowNetwork::State::settle_class(std::uint32_t cls, std::int64_t now_ps) {
  ClassDrain& d = tables_.drain[cls];
  if (now_ps > d.settled_ps) {
    d.drained +=
        tables_.hot[cls].rate * (static_cast<double>(now_ps - d.settled_ps) * kSecondsPerPs);
    d.settled_ps = now_ps;
  }
}

std::int64_t FlowNetwork::State::drain_end_ps(std::uint32_t cls) const {
  const ClassDrain& d = tables_.drain[cls];
  // Saturates at the end of the clock (a late start); drain_event reports a drain cut short.
  const std::int64_t left = drain_ps(d.first_target - d.drained, tables_.hot[cls].rate);
  const std::int64_t last = Time::max().picoseconds();
  return left > last - d.settled_ps ? last : d.settled_ps + left;
}

void FlowNetwork::State::update_drain_end(std::uint32_t cls) {
  drain_queue_.set(cls, drain_end_ps(cls));
}

void FlowNetwork::State::reschedule_drain_event() {
  if (drain_queue_.empty()) {
    sim_.cancel(drain_event_);
    drain_event_ps_ = -1;
    return;
  }
  const std::int64_t at = std::max(drain_queue_.first_end(), sim_.now().picoseconds());
  if (at == drain_event_ps_ && sim_.pending(drain_event_)) return;
  sim_.cancel(drain_event_);
  drain_event_ = sim_.schedule_at(Time::ps(at), [this] { drain_event(); });
  drain_event_ps_ = at;
}

void FlowNetwork::State::drain_event() {
  drain_event_ = EventHandle();
  drain_event_ps_ = -1;
  const Time now = sim_.now();
  const std::int64_t now_ps = now.picoseconds();
  // The classes due, in (drain end, class) order: those of one end leave the queue together,
  // which is the same as one by one because finishing one changes no other's drain.
  while (!drain_queue_.empty() && drain_queue_.first_end() <= now_ps) {
    drain_queue_.take_first(due_);
    for (const std::uint32_t cls : due_)
      drain_class(cls, now);
  }
  reschedule_drain_event();
}

void FlowNetwork::State::drain_class(std::uint32_t cls, Time now) {
  const std::int64_t now_ps = now.picoseconds();
  ClassHot& h = tables_.hot[cls];
  ClassDrain& d = tables_.drain[cls];
  settle_class(cls, now_ps);
  // Due with bytes left: its drain end was capped (kMaxDrainPs, or the end of the clock).
  if (d.first_target - d.drained > 1e-7 * d.first_target + 1.0) {
    throw InputError(fmt::format(
        "simulated time runs out: at {} a transfer still has {} to send at {}; one transfer "
        "may take up to about 46 days and the clock stops at about 106 days (is a size or a "
        "start time too large?)",
        format_time(now),
        format_bytes(Bytes(static_cast<std::int64_t>(std::min(d.first_target - d.drained, 9e18)))),
        format_bandwidth(BytesPerSecond(h.rate))));
  }
  max_min_.note_departure(h.rate);
  const std::uint32_t departed = finish_due_parts(cls, now);
  const std::span<const std::uint32_t> links = tables_.path(cls);
  const double departed_load = static_cast<double>(departed) * h.rate;
  if (FlowTables::sprayed(h)) tables_.sprayed_flows -= departed;
  for (std::size_t i = 0; i < links.size(); ++i) {
    tables_.link_flows[links[i]] -= departed;
    if (options_.idle_tolerance == 0.0)
      tables_.link_unsolved[links[i]] += departed_load * tables_.share(cls, i);
  }
  if (options_.idle_tolerance > 0.0 && !depart_needs_solve(cls, departed, now_ps)) {
    // Deferred: the class seeds the next solve, whenever a change runs one.
    max_min_.mark_changed(cls);
    ++deferred_departures_;
  } else {
    mark_dirty(cls);
  }
  if (h.flows == 0) {
    h.rate = 0.0;
    deactivate_class(cls);
  } else {
    update_drain_end(cls);
  }
}

std::uint32_t FlowNetwork::State::finish_due_parts(std::uint32_t cls, Time now) {
  FlowClass& c = tables_.classes[cls];
  ClassHot& h = tables_.hot[cls];
  ClassDrain& d = tables_.drain[cls];
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
  return departed;
}

void FlowNetwork::State::finish_part(std::uint32_t part_index, Time at) {
  Part& part = parts_[part_index];
  const FlowClass& c = tables_.classes[part.cls];
  const ClassHot& h = tables_.hot[part.cls];
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

void FlowNetwork::State::deliver(std::uint32_t flow) {
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

BytesPerSecond FlowNetwork::State::current_rate(FlowId flow) const {
  const auto slot = static_cast<std::uint32_t>(flow.value() & 0xffffffffu);
  const auto generation = static_cast<std::uint32_t>(flow.value() >> 32);
  if (slot >= flows_.size()) return BytesPerSecond(0.0);
  const FlowRecord& rec = flows_[slot];
  if (!rec.active || rec.generation != generation) return BytesPerSecond(0.0);
  double rate = 0.0;
  for (std::uint32_t p = rec.first_part; p != kNone; p = parts_[p].next) {
    if (parts_[p].cls != kNone) rate += tables_.hot[parts_[p].cls].rate;
  }
  return BytesPerSecond(rate);
}

// ---------------------------------------------------------------------------------------------
// Link loads and solving.

void FlowNetwork::State::set_link_load(std::uint32_t link, std::int64_t now_ps, double load) {
  stats_.settle(link, now_ps, tables_.link_load[link]);
  const double old_load = tables_.link_load[link];
  tables_.link_load[link] = load;
  stats_.record_sample(link, now_ps, old_load, load, tables_.link_capacity[link]);
}

bool FlowNetwork::State::depart_needs_solve(std::uint32_t cls, std::uint32_t departed,
                                            std::int64_t now_ps) {
  const double freed = static_cast<double>(departed) * tables_.hot[cls].rate;
  bool needs = false;
  const std::span<const std::uint32_t> links = tables_.path(cls);
  for (std::size_t i = 0; i < links.size(); ++i) {
    const std::uint32_t l = links[i];
    set_link_load(l, now_ps, std::max(tables_.link_load[l] - freed * tables_.share(cls, i), 0.0));
    // (A flow that arrived this instant may drain before the solve counted it.)
    stats_.remove_flows(l, departed);
    const double capacity = tables_.link_capacity[l];
    if (link_saturated_[l] != 0 &&
        capacity - tables_.link_load[l] > options_.idle_tolerance * capacity) {
      needs = true;
    }
  }
  return needs;
}

void FlowNetwork::State::solve() {
  solve_requested_ = false;
  const IncrementalMaxMin::Component component = max_min_.solve();
  if (component.links.empty()) return;  // nothing changed
  // Classes whose last flow left are freed once the search is over.
  for (const std::uint32_t d : max_min_.changed()) {
    if (tables_.hot[d].flows == 0 && tables_.classes[d].in_use) release_class(d);
  }
  max_min_.forget_changes();
  apply_rates(component, sim_.now().picoseconds());
  reschedule_drain_event();
#ifndef NDEBUG
  check_invariants();
#endif
}

void FlowNetwork::State::apply_rates(const IncrementalMaxMin::Component& component,
                                     std::int64_t now_ps) {
  // Classes whose rate did not really change keep their drain ends. When the component holds a
  // large part of the draining classes, the drain queue orders its ends once at the end (linear)
  // instead of at each change (drain_queue.hpp).
  const std::span<const std::uint32_t> classes = component.classes;
  const std::size_t nc = classes.size();
  const bool bulk = nc >= 1024 && 4 * nc >= drain_queue_.size();
  if (bulk) {
    drain_queue_.begin_bulk();
  } else {
    drain_queue_.begin_moves();
  }
  bool solved_rates = true;  // every class has the rate the solve found, bit for bit
  // (Read once: the tables do not move here, and the drain queue's stores may alias the vectors'
  // pointers for the compiler.)
  ClassHot* const hot = tables_.hot.data();
  const ClassDrain* const drain = tables_.drain.data();
  const double* const rates = component.rates.data();
  for (std::size_t i = 0; i < nc; ++i) {
    if (i + kPrefetchAhead < nc) {
      prefetch(&hot[classes[i + kPrefetchAhead]]);
      prefetch(&drain[classes[i + kPrefetchAhead]]);
    }
    const std::uint32_t cls = classes[i];
    ClassHot& h = hot[cls];
    const double rate = rates[i];
    if (h.rate == 0.0 || std::fabs(rate - h.rate) > kRateChangeTolerance * h.rate) {
      settle_class(cls, now_ps);
      h.rate = rate;
      update_drain_end(cls);
      ++rate_updates_;
    } else if (h.rate != rate) {
      solved_rates = false;
    }
  }
  if (bulk) {
    drain_queue_.end_bulk();
  } else {
    drain_queue_.end_moves();
  }
  // The links' loads under the rates applied: those the solve summed, unless a class kept an old
  // rate a hair from its new one.
  if (solved_rates) {
    max_min_.use_solved_loads();
  } else {
    max_min_.begin_loads();
    for (std::size_t i = 0; i < nc; ++i) {
      const ClassHot& h = tables_.hot[classes[i]];
      max_min_.add_class_load(i, h.flows, h.rate);
    }
  }
  for (std::size_t j = 0; j < component.links.size(); ++j) {
    const std::uint32_t l = component.links[j];
    set_link_load(l, now_ps, max_min_.load(j));
    tables_.link_unsolved[l] = 0.0;
    stats_.set_flows(l, max_min_.flows(j));
    link_saturated_[l] = saturated(max_min_.load(j), tables_.link_capacity[l]) ? 1 : 0;
  }
}

// ---------------------------------------------------------------------------------------------
// Statistics and checks.

LinkStatistics FlowNetwork::State::link_statistics(LinkId link) const {
  const std::uint32_t l = stands_for(link);
  return stats_.statistics(l, sim_.now().picoseconds(), tables_.link_load[l],
                           tables_.link_capacity[l]);
}

void FlowNetwork::State::restart_statistics() {
  stats_.restart(sim_.now().picoseconds(), tables_.link_load);
}

void FlowNetwork::State::check_invariants() const {
  const std::int64_t now_ps = sim_.now().picoseconds();
  const bool solved = !max_min_.has_changes();
  // Deferred departures (idle_tolerance) update the link loads at once; arrivals wait for the
  // solve that ends their instant.
  const bool loads_current = solved || (options_.idle_tolerance > 0.0 && !solve_requested_);
  auto where = [](const char* what, std::size_t index) {
    return std::string(what) + " " + std::to_string(index);
  };

  double link_total = 0.0;
  for (std::uint32_t l = 0; l < tables_.link_capacity.size(); ++l) {
    double load = 0.0;
    std::uint64_t flows = 0;
    const std::vector<std::uint32_t>& on_link = tables_.link_classes[l];
    if (tables_.link_shares[l].size() != on_link.size())
      broken(where("class shares out of step with the classes on link", l));
    for (std::size_t k = 0; k < on_link.size(); ++k) {
      const ClassHot& h = tables_.hot[on_link[k]];
      if (h.flows == 0 || !tables_.classes[on_link[k]].in_use)
        broken(where("inactive class listed on link", l));
      load += static_cast<double>(h.flows) * h.rate * tables_.link_shares[l][k];
      // (A path that lists the link twice lists the class twice.)
      flows += h.flows;
    }
    if (flows != tables_.link_flows[l]) broken(where("flow count out of step on link", l));
    if (solved && tables_.link_unsolved[l] != 0.0)
      broken(where("unsolved load left over after a solve on link", l));
    const double cap = tables_.link_capacity[l];
    const double link_load = tables_.link_load[l];
    if (loads_current && std::fabs(load - link_load) > 1e-9 * cap) {
      broken(where("load differs from the sum of its flows' rates on link", l));
    }
    if (link_load > cap * (1.0 + 1e-9)) {
      broken(where("load above bandwidth on link", l) + ": " + std::to_string(link_load) + " > " +
             std::to_string(cap) + " B/s");
    }
    const double dt = static_cast<double>(now_ps - stats_.settled_ps(l)) * kSecondsPerPs;
    link_total += stats_.lifetime_bytes(l) + link_load * dt;
  }

  const double flow_total = drained_link_bytes(now_ps);
  if (std::fabs(link_total - flow_total) >
      1e-9 * std::max(link_total, flow_total) + rounding_link_bytes_ + 1e-3) {
    broken("bytes not conserved: links carried " + std::to_string(link_total) +
           " link-bytes, flows drained " + std::to_string(flow_total));
  }
}

// Checks the classes (as check_invariants() says) and returns the bytes their flows drained times
// their path lengths (shares), those finished included.
double FlowNetwork::State::drained_link_bytes(std::int64_t now_ps) const {
  const bool solved = !max_min_.has_changes();
  auto where = [](const char* what, std::size_t index) {
    return std::string(what) + " " + std::to_string(index);
  };
  double flow_total = finished_link_bytes_;
  std::size_t in_heap = 0;
  for (std::uint32_t cls = 0; cls < tables_.classes.size(); ++cls) {
    const FlowClass& c = tables_.classes[cls];
    const ClassHot& h = tables_.hot[cls];
    const ClassDrain& d = tables_.drain[cls];
    if (!c.in_use || h.flows == 0) continue;
    if (!(h.rate >= 0.0) || !std::isfinite(h.rate)) broken(where("bad rate in class", cls));
    if (solved && !(h.rate > 0.0)) broken(where("draining class without a rate", cls));
    if (h.rate > tables_.rate_cap(cls) * (1.0 + 1e-9))
      broken(where("rate above its cap in class", cls));
    if (c.targets.size() != h.flows) broken(where("flow count mismatch in class", cls));
    const std::span<const std::uint32_t> links = tables_.path(cls);
    if (links.size() != c.slot_in_link.size()) {
      broken(where("path length mismatch in class", cls));
    }
    for (std::size_t i = 0; i < links.size(); ++i) {
      const std::vector<std::uint32_t>& on_link = tables_.link_classes[links[i]];
      if (c.slot_in_link[i] >= on_link.size() || on_link[c.slot_in_link[i]] != cls)
        broken(where("class not at its slot on a link of its path, class", cls));
    }
    if (h.rate > 0.0) {
      if (!drain_queue_.contains(cls))
        broken(where("draining class missing from the drain queue", cls));
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
  if (in_heap != drain_queue_.size()) broken("drain queue holds classes that are not draining");
  if (!drain_queue_.empty() && !sim_.pending(drain_event_)) {
    broken("flows are draining but no drain event is scheduled");
  }
  return flow_total;
}

}  // namespace stepsim::engine
