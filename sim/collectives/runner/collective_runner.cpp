#include "sim/collectives/runner/collective_runner.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace stepsim::collectives {
namespace {

// What the transfer puts on the wire: its payload times the plan's protocol overhead (LL's and
// LL128's flags; protocol.hpp).
Bytes wire_bytes(const Plan& plan, const Transfer& t) {
  const double factor = plan.wire_factor();
  return factor == 1.0 ? t.bytes : Bytes(std::llround(t.bytes.as_double() * factor));
}

}  // namespace

CollectiveRunner::CollectiveRunner(engine::Simulator& simulator, engine::FlowNetwork& network,
                                   const topology::Topology& topology, topology::Router& router,
                                   const NetworkLinks& links, RunnerOptions options)
    : sim_(simulator),
      network_(network),
      topology_(topology),
      router_(router),
      links_(links),
      options_(options) {
  if (options_.link_aliases) alias_symmetric_links(network_, topology_, options_.ecmp);
}

void CollectiveRunner::start(std::shared_ptr<const Plan> plan, const Placement& placement,
                             DoneCallback on_done, RouteMemo* memo) {
  std::uint32_t index;
  if (free_runs_.empty()) {
    index = static_cast<std::uint32_t>(runs_.size());
    runs_.push_back(std::make_unique<Run>());
  } else {
    index = free_runs_.back();
    free_runs_.pop_back();
  }
  Run& run = *runs_[index];
  run.plan = std::move(plan);
  run.placement = placement;
  run.on_done = std::move(on_done);
  run.memo = memo;
  run.serial = serial_++;
  const Plan& p = *run.plan;
  run.left = p.size();
  run.waiting.resize(p.size());
  run.ceiling_links.assign(p.send_ceilings().size(), NetworkLinks::kNoLink);
  if (p.has_transfer_ceilings())
    run.transfer_links.assign(p.size(), NetworkLinks::kNoLink);
  else
    run.transfer_links.clear();
  if (memo != nullptr && memo->routes_.size() != p.size()) memo->routes_.assign(p.size(), kUnknown);
  ++running_;
  if (p.size() == 0) {  // nothing to move: done now, reported as an event like any completion
    sim_.schedule_after(Time::zero(), [this, index] {
      Run& r = *runs_[index];
      --running_;
      auto done = std::move(r.on_done);
      r.plan.reset();
      free_runs_.push_back(index);
      done(sim_.now());
    });
    return;
  }
  for (std::uint32_t t = 0; t < p.size(); ++t)
    run.waiting[t] = static_cast<std::uint32_t>(p.dependencies(TransferId(t)).size());
  for (std::uint32_t t = 0; t < p.size(); ++t)
    if (run.waiting[t] == 0) release(index, TransferId(t));
}

topology::NodeId CollectiveRunner::node_of(const Run& run, Endpoint endpoint) const {
  if (endpoint.is_network_switch()) {
    const std::uint32_t index = endpoint.network_switch_index();
    if (index < run.placement.network_switches.size()) return run.placement.network_switches[index];
    throw std::logic_error("collective plan uses a network switch the group lacks (bug)");
  }
  if (endpoint.is_switch()) {
    const std::uint32_t domain = endpoint.switch_domain();
    if (domain == 0 && run.placement.reduction_switch) return *run.placement.reduction_switch;
    if (domain < run.placement.domain_switches.size()) return run.placement.domain_switches[domain];
    throw std::logic_error("collective plan uses a reduction switch the group lacks (bug)");
  }
  return run.placement.members.at(endpoint.member_index());
}

std::uint32_t CollectiveRunner::cached_route(topology::NodeId src, topology::NodeId dst) {
  const std::uint64_t pair = (static_cast<std::uint64_t>(src.value()) << 32) | dst.value();
  const auto [it, inserted] = route_by_pair_.try_emplace(pair, kNotCached);
  if (!inserted) return it->second;
  CachedRoute route;
  if (options_.ecmp != topology::EcmpMode::kSpread && !hashing_only()) {
    const topology::MultipathRoute r = router_.multipath(src, dst, 0, options_.ecmp);
    if (r.key_dependent) return kNotCached;
    route.latency = r.latency;
    if (r.sprayed()) {
      // Kept with one link per group of symmetric links (alias_symmetric_links), once here
      // rather than at every transfer.
      shares_scratch_.clear();
      append_link_shares(r, shares_scratch_);
      network_.keep_representatives(shares_scratch_);
      route.first_share = static_cast<std::uint32_t>(route_shares_.size());
      route.shares = static_cast<std::uint32_t>(shares_scratch_.size());
      route_shares_.insert(route_shares_.end(), shares_scratch_.begin(), shares_scratch_.end());
    } else {
      route.first_path = static_cast<std::uint32_t>(route_paths_.size());
      route.paths = 1;
      route_paths_.push_back({static_cast<std::uint32_t>(route_links_.size()),
                              static_cast<std::uint32_t>(r.path.size())});
      for (topology::LinkIndex l : r.path)
        route_links_.push_back(engine::LinkId{l.value()});
    }
    it->second = static_cast<std::uint32_t>(routes_.size());
    routes_.push_back(route);
    return it->second;
  }
  if (options_.ecmp != topology::EcmpMode::kSpread && !router_.route_is_unique(src, dst))
    return kNotCached;
  // Spread routes never depend on the key; a unique hash route is the one any key gives.
  const topology::Routes routes = router_.routes(
      src, dst,
      options_.ecmp == topology::EcmpMode::kSpread ? options_.ecmp : topology::EcmpMode::kHash, 0);
  route.first_path = static_cast<std::uint32_t>(route_paths_.size());
  route.paths = static_cast<std::uint32_t>(routes.paths.size());
  for (const topology::Path& path : routes.paths) {
    Time latency;
    route_paths_.push_back(
        {static_cast<std::uint32_t>(route_links_.size()), static_cast<std::uint32_t>(path.size())});
    for (topology::LinkIndex l : path) {
      latency += topology_.latency(l);
      route_links_.push_back(engine::LinkId{l.value()});
    }
    route.latency = std::max(route.latency, latency);
  }
  it->second = static_cast<std::uint32_t>(routes_.size());
  routes_.push_back(route);
  return it->second;
}

std::uint32_t CollectiveRunner::cached_route(topology::NodeId src, topology::NodeId via,
                                             topology::NodeId dst) {
  const auto [it, inserted] =
      route_by_triple_.try_emplace(Triple{src.value(), via.value(), dst.value()}, kNotCached);
  if (!inserted) return it->second;
  const std::uint32_t first = cached_route(src, via), second = cached_route(via, dst);
  if (first == kNotCached || second == kNotCached) return kNotCached;
  const CachedRoute a = routes_[first], b = routes_[second];
  CachedRoute route;
  route.latency = a.latency + b.latency;
  if (a.shares > 0 || b.shares > 0) {
    // A sprayed part makes the whole route sprayed: both parts' links one after the other (the
    // flow network sums the shares of a link that both cross).
    shares_scratch_.clear();
    for (const CachedRoute& part : {a, b}) {
      if (part.shares > 0) {
        shares_scratch_.insert(shares_scratch_.end(), route_shares_.begin() + part.first_share,
                               route_shares_.begin() + part.first_share + part.shares);
      } else {
        for (const engine::LinkId l : route_path(part.first_path))
          shares_scratch_.push_back({l, 1.0});
      }
    }
    route.first_share = static_cast<std::uint32_t>(route_shares_.size());
    route.shares = static_cast<std::uint32_t>(shares_scratch_.size());
    route_shares_.insert(route_shares_.end(), shares_scratch_.begin(), shares_scratch_.end());
    it->second = static_cast<std::uint32_t>(routes_.size());
    routes_.push_back(route);
    return it->second;
  }
  route.first_path = static_cast<std::uint32_t>(route_paths_.size());
  route.paths = std::max(a.paths, b.paths);
  std::vector<engine::LinkId> links;  // a copy: route_links_ grows below
  for (std::uint32_t p = 0; p < route.paths; ++p) {
    links.clear();
    for (std::uint32_t part : {a.first_path + p % a.paths, b.first_path + p % b.paths}) {
      const auto span = route_path(part);
      links.insert(links.end(), span.begin(), span.end());
    }
    route_paths_.push_back({static_cast<std::uint32_t>(route_links_.size()),
                            static_cast<std::uint32_t>(links.size())});
    route_links_.insert(route_links_.end(), links.begin(), links.end());
  }
  it->second = static_cast<std::uint32_t>(routes_.size());
  routes_.push_back(route);
  return it->second;
}

std::span<const engine::LinkId> CollectiveRunner::route_path(std::uint32_t path) const {
  const PathRange& range = route_paths_[path];
  return {route_links_.data() + range.offset, range.size};
}

bool CollectiveRunner::hashing_only() const {
  return options_.ecmp == topology::EcmpMode::kHash ||
         (options_.ecmp == topology::EcmpMode::kFabric && !router_.fabric_sprays());
}

Time CollectiveRunner::append_route(Pending& pending, topology::NodeId from, topology::NodeId to,
                                    std::uint64_t key) {
  Time latency;
  if (hashing_only()) {
    for (topology::LinkIndex l : router_.route(from, to, key)) {
      latency += topology_.latency(l);
      pending.path.push_back(engine::LinkId{l.value()});
    }
    return latency;
  }
  const topology::MultipathRoute r = router_.multipath(from, to, key, options_.ecmp);
  if (!r.sprayed() && pending.shares.empty()) {
    for (topology::LinkIndex l : r.path)
      pending.path.push_back(engine::LinkId{l.value()});
    return r.latency;
  }
  // Sprayed (this part or an earlier one): the pending route becomes a set of shares.
  for (const engine::LinkId l : pending.path)
    pending.shares.push_back({l, 1.0});
  pending.path.clear();
  append_link_shares(r, pending.shares);
  return r.latency;
}

namespace {

// The capacity of a member's ceiling link: its send ceiling, a payload rate, in the wire bytes the
// flows carry (the protocol's overhead included).
double ceiling_capacity(const Plan& plan, std::uint32_t member) {
  return plan.send_ceilings()[member].value() * plan.wire_factor();
}

// The same for a transfer's own ceiling link (Transfer::rate_ceiling): the pool's key when the
// link is taken and when it is returned.
double transfer_capacity(const Plan& plan, const Transfer& t) {
  return t.rate_ceiling.value() * plan.wire_factor();
}

}  // namespace

std::uint32_t CollectiveRunner::ceiling_link(Run& run, const Transfer& t) {
  if (t.src.is_switch()) return NetworkLinks::kNoLink;
  const std::uint32_t member = t.src.member_index();
  if (member >= run.ceiling_links.size()) return NetworkLinks::kNoLink;
  std::uint32_t& link = run.ceiling_links[member];
  if (link != NetworkLinks::kNoLink) return link;
  const double capacity = ceiling_capacity(*run.plan, member);
  if (!(capacity > 0)) return NetworkLinks::kNoLink;
  link = take_ceiling_link(capacity);
  return link;
}

std::uint32_t CollectiveRunner::take_ceiling_link(double capacity) {
  auto& free = free_ceiling_links_[capacity];
  if (free.empty()) return network_.add_link(BytesPerSecond(capacity), Time::zero()).value();
  const std::uint32_t link = free.back();
  free.pop_back();
  return link;
}

double CollectiveRunner::transfer_cap(const Run& run, const Transfer& t) {
  if (run.transfer_links.empty() || !(t.rate_ceiling.value() > 0))
    return std::numeric_limits<double>::infinity();
  return transfer_capacity(*run.plan, t);
}

std::uint32_t CollectiveRunner::transfer_link(Run& run, TransferId id, const Transfer& t) {
  const double cap = transfer_cap(run, t);
  if (!std::isfinite(cap)) return NetworkLinks::kNoLink;
  const std::uint32_t link = take_ceiling_link(cap);
  run.transfer_links[id.value()] = link;
  return link;
}

void CollectiveRunner::release(std::uint32_t run_index, TransferId id) {
  Run& run = *runs_[run_index];
  const Transfer& t = run.plan->transfer(id);
  if (t.is_join()) {
    sim_.schedule_after(t.extra_latency, [this, run_index, id] { complete(run_index, id); });
    return;
  }
  std::uint32_t slot;
  if (free_pending_.empty()) {
    slot = static_cast<std::uint32_t>(pending_.size());
    pending_.emplace_back();
  } else {
    slot = free_pending_.back();
    free_pending_.pop_back();
  }
  Pending& pending = pending_[slot];
  pending.run = run_index;
  pending.transfer = id;
  pending.path.clear();
  pending.shares.clear();
  const topology::NodeId src = node_of(run, t.src), dst = node_of(run, t.dst);
  const bool relayed = t.relay != Transfer::kNoRelay;
  const topology::NodeId via = relayed ? run.placement.members.at(t.relay) : src;
  auto lookup = [&] { return relayed ? cached_route(src, via, dst) : cached_route(src, dst); };
  if (run.memo == nullptr) {
    pending.route = lookup();
  } else {
    std::uint32_t& memo = run.memo->routes_[id.value()];
    if (memo == kUnknown) memo = lookup();
    pending.route = memo;
  }
  Time route_latency;
  if (pending.route != kNotCached) {
    route_latency = routes_[pending.route].latency;
  } else {
    // ECMP hash key: the collective's serial and the transfer, so reruns hash identically.
    const std::uint64_t key = (run.serial << 32) ^ id.value();
    if (relayed) route_latency += append_route(pending, src, via, key);
    route_latency += append_route(pending, via, dst, key);
    pending.sprayed_latency = route_latency;
  }
  // A fluid transfer standing for k steps crosses its route k times; the flow pays it once.
  const Time delay =
      t.extra_latency + route_latency * (static_cast<std::int64_t>(t.path_traversals) - 1);
  if (delay == Time::zero())
    launch(slot);
  else
    sim_.schedule_after(delay, [this, slot] { launch(slot); });
}

void CollectiveRunner::launch(std::uint32_t slot) {
  Pending& pending = pending_[slot];
  const std::uint32_t run_index = pending.run;
  const TransferId id = pending.transfer;
  Run& run = *runs_[run_index];
  const Transfer& t = run.plan->transfer(id);
  const CachedRoute* cached = pending.route != kNotCached ? &routes_[pending.route] : nullptr;
  auto on_done = [this, run_index, id](const engine::FlowCompletion&) { complete(run_index, id); };
  if ((cached != nullptr && cached->shares > 0) || !pending.shares.empty()) {
    const double cap = transfer_cap(run, t);
    if (cached != nullptr) {
      start_sprayed(run, t,
                    std::span<const engine::LinkShare>(route_shares_.data() + cached->first_share,
                                                       cached->shares),
                    cached->latency, cap, std::move(on_done));
    } else {
      start_sprayed(run, t, pending.shares, pending.sprayed_latency, cap, std::move(on_done));
    }
    pending.shares.clear();
    free_pending_.push_back(slot);
    return;
  }
  const std::span<const engine::LinkId> first = cached != nullptr
                                                    ? route_path(cached->first_path)
                                                    : std::span<const engine::LinkId>(pending.path);
  Bytes bytes = wire_bytes(*run.plan, t);
  if (t.src.is_switch() || t.dst.is_switch()) {
    // In-switch traffic: the member's own link (first link up, last link down) sets the overhead.
    if (!first.empty()) {
      const double factor =
          links_.in_switch_factor[(t.src.is_switch() ? first.back() : first.front()).value()];
      bytes = Bytes(std::llround(bytes.as_double() * factor));
    }
  }
  const topology::NodeId src = node_of(run, t.src), dst = node_of(run, t.dst);
  // A reducing plan's transfer into an accelerator with a reduction throughput also crosses that
  // accelerator's reduction link (topology_network.hpp).
  const std::uint32_t reduction_link =
      run.plan->reduction() == Reduction::kByMembers && !t.dst.is_switch() && !first.empty()
          ? links_.reduction_link[dst.value()]
          : NetworkLinks::kNoLink;
  const std::uint32_t ceiling = first.empty() ? NetworkLinks::kNoLink : ceiling_link(run, t);
  const std::uint32_t paths = cached == nullptr ? 1 : cached->paths;
  // The transfer's own ceiling: its flow's rate cap on one path; a private link that every part
  // crosses when the flow splits over several (a cap would hold each part, not their sum).
  const double cap = paths == 1 ? transfer_cap(run, t) : std::numeric_limits<double>::infinity();
  const std::uint32_t own = paths == 1 ? NetworkLinks::kNoLink : transfer_link(run, id, t);
  const bool extend = reduction_link != NetworkLinks::kNoLink || ceiling != NetworkLinks::kNoLink ||
                      own != NetworkLinks::kNoLink;
  if (extend && extended_.size() < paths) extended_.resize(paths);
  auto path = [&](std::uint32_t p) -> std::span<const engine::LinkId> {
    const std::span<const engine::LinkId> links =
        cached == nullptr ? first : route_path(cached->first_path + p);
    if (!extend) return links;
    extended_[p].assign(links.begin(), links.end());
    if (reduction_link != NetworkLinks::kNoLink)
      extended_[p].push_back(engine::LinkId{reduction_link});
    if (ceiling != NetworkLinks::kNoLink) extended_[p].push_back(engine::LinkId{ceiling});
    if (own != NetworkLinks::kNoLink) extended_[p].push_back(engine::LinkId{own});
    return extended_[p];
  };
  if (paths == 1) {
    // (An infinite cap is none.)
    network_.start_flow(src.value(), dst.value(), bytes, path(0), BytesPerSecond(cap),
                        std::move(on_done));
  } else {
    weighted_.clear();
    for (std::uint32_t p = 0; p < paths; ++p)
      weighted_.push_back({path(p), 1.0});
    network_.start_flow(src.value(), dst.value(), bytes, weighted_, std::move(on_done));
  }
  pending.path.clear();
  free_pending_.push_back(slot);
}

void CollectiveRunner::start_sprayed(Run& run, const Transfer& t,
                                     std::span<const engine::LinkShare> shares, Time latency,
                                     double rate_cap, engine::FlowCallback on_done) {
  const topology::NodeId src = node_of(run, t.src), dst = node_of(run, t.dst);
  Bytes bytes = wire_bytes(*run.plan, t);
  if (t.src.is_switch() || t.dst.is_switch()) {
    // In-switch traffic: the member's own links set the overhead (the links leaving the member
    // up, or entering it down); a sprayed member uses them all alike.
    for (const engine::LinkShare& s : shares) {
      const topology::LinkIndex l(s.link.value());
      if (t.src.is_switch() ? topology_.target(l) == dst : topology_.source(l) == src) {
        bytes = Bytes(std::llround(bytes.as_double() * links_.in_switch_factor[s.link.value()]));
        break;
      }
    }
  }
  const std::uint32_t reduction_link =
      run.plan->reduction() == Reduction::kByMembers && !t.dst.is_switch() && !shares.empty()
          ? links_.reduction_link[dst.value()]
          : NetworkLinks::kNoLink;
  const std::uint32_t ceiling = shares.empty() ? NetworkLinks::kNoLink : ceiling_link(run, t);
  if (reduction_link != NetworkLinks::kNoLink || ceiling != NetworkLinks::kNoLink) {
    shares_scratch_.assign(shares.begin(), shares.end());
    if (reduction_link != NetworkLinks::kNoLink)
      shares_scratch_.push_back({engine::LinkId{reduction_link}, 1.0});
    if (ceiling != NetworkLinks::kNoLink) shares_scratch_.push_back({engine::LinkId{ceiling}, 1.0});
    shares = shares_scratch_;
  }
  network_.start_sprayed_flow(src.value(), dst.value(), bytes, shares, latency,
                              BytesPerSecond(rate_cap), std::move(on_done));
}

void CollectiveRunner::complete(std::uint32_t run_index, TransferId id) {
  if (++completed_transfers_ % RunnerOptions::kProgressTransfers == 0 && options_.progress)
    options_.progress(completed_transfers_);
  Run& run = *runs_[run_index];
  if (!run.transfer_links.empty()) {
    std::uint32_t& link = run.transfer_links[id.value()];
    if (link != NetworkLinks::kNoLink) {
      free_ceiling_links_[transfer_capacity(*run.plan, run.plan->transfer(id))].push_back(link);
      link = NetworkLinks::kNoLink;
    }
  }
  for (TransferId next : run.plan->dependents(id))
    if (--run.waiting[next.value()] == 0) release(run_index, next);
  if (--run.left == 0) {
    --running_;
    for (std::uint32_t member = 0; member < run.ceiling_links.size(); ++member) {
      const std::uint32_t link = run.ceiling_links[member];
      if (link == NetworkLinks::kNoLink) continue;
      free_ceiling_links_[ceiling_capacity(*run.plan, member)].push_back(link);
    }
    run.ceiling_links.clear();
    auto done = std::move(run.on_done);
    run.plan.reset();
    run.waiting.clear();
    free_runs_.push_back(run_index);
    done(sim_.now());
  }
}

}  // namespace stepsim::collectives
