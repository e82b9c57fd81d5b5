#include "sim/collectives/collective_runner.hpp"

#include <cmath>
#include <stdexcept>

namespace stepsim::collectives {

CollectiveRunner::CollectiveRunner(engine::Simulator& simulator, engine::FlowNetwork& network,
                                   const topology::Topology& topology, topology::Router& router,
                                   const NetworkLinks& links, RunnerOptions options)
    : sim_(simulator),
      network_(network),
      topology_(topology),
      router_(router),
      links_(links),
      options_(options) {}

void CollectiveRunner::start(std::shared_ptr<const Plan> plan, const Placement& placement,
                             DoneCallback on_done) {
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
  run.serial = serial_++;
  const Plan& p = *run.plan;
  run.left = p.size();
  run.waiting.resize(p.size());
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
  if (endpoint.is_switch()) {
    if (!run.placement.reduction_switch)
      throw std::logic_error("collective plan uses a reduction switch the group lacks (bug)");
    return *run.placement.reduction_switch;
  }
  return run.placement.members.at(endpoint.member_index());
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
  pending.spread.clear();
  const topology::NodeId src = node_of(run, t.src), dst = node_of(run, t.dst);
  // ECMP hash key: the collective's serial and the transfer, so reruns hash identically.
  const std::uint64_t key = (run.serial << 32) ^ id.value();
  const topology::Routes routes = router_.routes(src, dst, options_.ecmp, key);
  Time route_latency;
  for (std::size_t r = 0; r < routes.paths.size(); ++r) {
    Time latency;
    std::vector<engine::LinkId> links;
    links.reserve(routes.paths[r].size());
    for (topology::LinkIndex l : routes.paths[r]) {
      latency += topology_.latency(l);
      links.push_back(engine::LinkId{l.value()});
    }
    route_latency = std::max(route_latency, latency);
    if (routes.paths.size() == 1)
      pending.path = std::move(links);
    else
      pending.spread.push_back(std::move(links));
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
  const Run& run = *runs_[run_index];
  const Transfer& t = run.plan->transfer(id);
  Bytes bytes = t.bytes;
  if (t.src.is_switch() || t.dst.is_switch()) {
    // In-switch traffic: the member's own link (first link up, last link down) sets the overhead.
    const auto& path =
        pending.path.empty() && !pending.spread.empty() ? pending.spread.front() : pending.path;
    if (!path.empty()) {
      const double factor =
          links_.in_switch_factor[(t.src.is_switch() ? path.back() : path.front()).value];
      bytes = Bytes(std::llround(bytes.as_double() * factor));
    }
  }
  const topology::NodeId src = node_of(run, t.src), dst = node_of(run, t.dst);
  auto on_done = [this, run_index, id](const engine::FlowCompletion&) { complete(run_index, id); };
  if (pending.spread.empty()) {
    network_.start_flow(src.value(), dst.value(), bytes, pending.path, std::move(on_done));
  } else {
    std::vector<engine::WeightedPath> paths;
    for (const auto& p : pending.spread)
      paths.push_back({p, 1.0});
    network_.start_flow(src.value(), dst.value(), bytes, paths, std::move(on_done));
  }
  pending.path.clear();
  pending.spread.clear();
  free_pending_.push_back(slot);
}

void CollectiveRunner::complete(std::uint32_t run_index, TransferId id) {
  Run& run = *runs_[run_index];
  for (TransferId next : run.plan->dependents(id))
    if (--run.waiting[next.value()] == 0) release(run_index, next);
  if (--run.left == 0) {
    --running_;
    auto done = std::move(run.on_done);
    run.plan.reset();
    run.waiting.clear();
    free_runs_.push_back(run_index);
    done(sim_.now());
  }
}

}  // namespace stepsim::collectives
