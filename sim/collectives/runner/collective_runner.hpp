// Runs collective plans on a flow network built from a topology (topology_network.hpp).
//
// `start` begins a plan at the simulator's current time and returns at once; the runner starts
// each transfer when its dependencies have completed (after the transfer's extra latency, and
// path_traversals - 1 extra crossings of its route's latency), as a flow from the member's
// accelerator to the other endpoint's, on the route the topology's router gives (one hashed path,
// or spread over the equal-cost paths; a relayed transfer takes the route to its relay, then the
// relay's route to the destination), and calls `on_done` with the time the last transfer
// completed. Many collectives may run at once on one network (the executor of a training step
// does that); they share links like any other flows. The runner never runs the simulator itself.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "sim/collectives/plan/plan.hpp"
#include "sim/collectives/runner/placement.hpp"
#include "sim/collectives/runner/topology_network.hpp"
#include "sim/engine/flow_network.hpp"
#include "sim/engine/simulator.hpp"
#include "topology/router.hpp"

namespace stepsim::collectives {

struct RunnerOptions {
  // How a transfer crosses parallel links: as the fabric's link classes say (the default), or
  // hashed, sprayed or spread everywhere (topology/router.hpp).
  topology::EcmpMode ecmp = topology::EcmpMode::kFabric;
  // Keep one link of each group of symmetric links in the flow network (alias_symmetric_links):
  // the same rates, less work. Off only to check that claim.
  bool link_aliases = true;
  // Called every kProgressTransfers completed transfers with the number completed since the
  // runner was made (a progress line); empty: never.
  std::function<void(std::uint64_t transfers_completed)> progress = {};
  static constexpr std::uint64_t kProgressTransfers = 4096;
};

// The routes of one plan on one placement, kept by the caller between runs of that plan on that
// placement (the executor runs each of its plans many times), so that the runner finds each
// transfer's route without a lookup. Only routes that do not depend on the ECMP key are kept.
class RouteMemo {
 private:
  friend class CollectiveRunner;
  std::vector<std::uint32_t> routes_;  // per transfer: a cached route, kNotCached or kUnknown
};

class CollectiveRunner {
 public:
  using DoneCallback = std::function<void(Time finish)>;

  // All references must outlive the runner; the runner must outlive the runs it started.
  CollectiveRunner(engine::Simulator& simulator, engine::FlowNetwork& network,
                   const topology::Topology& topology, topology::Router& router,
                   const NetworkLinks& links, RunnerOptions options = {});
  CollectiveRunner(const CollectiveRunner&) = delete;
  CollectiveRunner& operator=(const CollectiveRunner&) = delete;

  // Starts `plan` now for the group placed at `placement` (plan member i on placement.members[i];
  // the switch endpoint on placement.reduction_switch, which the plan may only use when set:
  // std::logic_error otherwise).
  // `memo`, when given, must be used with this plan and placement only and outlive the run.
  void start(std::shared_ptr<const Plan> plan, const Placement& placement, DoneCallback on_done,
             RouteMemo* memo = nullptr);
  // Collectives started and not yet done.
  std::size_t running() const { return running_; }

 private:
  struct Run {
    std::shared_ptr<const Plan> plan;
    Placement placement;
    DoneCallback on_done;
    RouteMemo* memo = nullptr;
    std::vector<std::uint32_t> waiting;  // dependencies not yet completed, per transfer
    std::size_t left = 0;                // transfers not yet completed
    std::uint64_t serial = 0;            // for ECMP hashing
    // Per member, the link that holds its sends to the plan's send ceiling (Plan::send_ceilings),
    // taken from the pool at its first send and returned when the run ends; kNoLink until then.
    std::vector<std::uint32_t> ceiling_links;
    // Per transfer, when the plan has transfer ceilings (Transfer::rate_ceiling): the link that
    // holds a transfer split over several paths to its ceiling while it runs, taken from the pool
    // when it starts and returned when it completes; kNoLink otherwise (a transfer on one path,
    // or sprayed, has its ceiling as its flow's rate cap). Empty for plans without them.
    std::vector<std::uint32_t> transfer_links;
  };
  // A route computed once and reused for every transfer between the same two nodes: every
  // route in spread mode, and otherwise a route that no ECMP hash decides (the same for every
  // key). Its paths are ranges of route_links_; a sprayed route is a range of route_shares_.
  struct CachedRoute {
    std::uint32_t first_path = 0;  // in route_paths_
    std::uint32_t paths = 0;
    std::uint32_t first_share = 0;  // in route_shares_
    std::uint32_t shares = 0;       // > 0: a sprayed route (no paths)
    Time latency;                   // the longest path's
  };
  struct PathRange {
    std::uint32_t offset = 0;  // in route_links_
    std::uint32_t size = 0;
  };
  static constexpr std::uint32_t kNotCached = 0xffffffffu;
  static constexpr std::uint32_t kUnknown = 0xfffffffeu;
  struct Pending {                     // a transfer whose route is known, waiting out its latency
    std::uint32_t route = kNotCached;  // a cached route, or kNotCached: the route is in `path`
    std::vector<engine::LinkId> path;
    std::vector<engine::LinkShare> shares;  // uncached and sprayed: the route (path empty)
    Time sprayed_latency;
    std::uint32_t run = 0;
    TransferId transfer;
  };

  topology::NodeId node_of(const Run& run, Endpoint endpoint) const;
  // The cached route from `src` to `dst`, or kNotCached when it depends on the ECMP key.
  std::uint32_t cached_route(topology::NodeId src, topology::NodeId dst);
  // The same through `via`: path p is the route to `via` (path p mod its count) followed by the
  // route from `via` (path p mod its count); kNotCached when either part is not cached.
  std::uint32_t cached_route(topology::NodeId src, topology::NodeId via, topology::NodeId dst);
  std::span<const engine::LinkId> route_path(std::uint32_t path) const;
  // True when routes are hashed everywhere (hash mode, or a fabric without spraying links).
  bool hashing_only() const;
  // Appends the route from `src` to `dst` for `key` to the pending transfer; returns its latency.
  Time append_route(Pending& pending, topology::NodeId src, topology::NodeId dst,
                    std::uint64_t key);
  // `rate_cap`: the transfer's ceiling in wire bytes per second (infinity: none).
  void start_sprayed(Run& run, const Transfer& t, std::span<const engine::LinkShare> shares,
                     Time latency, double rate_cap, engine::FlowCallback on_done);
  // The link holding the sends of the transfer's source to its plan's send ceiling, or
  // NetworkLinks::kNoLink (no ceiling, or a switch sends).
  std::uint32_t ceiling_link(Run& run, const Transfer& t);
  // The link holding transfer `id` to its rate ceiling (Transfer::rate_ceiling), taken now, or
  // NetworkLinks::kNoLink (none).
  std::uint32_t transfer_link(Run& run, TransferId id, const Transfer& t);
  // Transfer `t`'s rate ceiling as a flow's cap, wire bytes per second; infinity when none.
  static double transfer_cap(const Run& run, const Transfer& t);
  // A ceiling link of `capacity` wire bytes per second from the pool (or a new one).
  std::uint32_t take_ceiling_link(double capacity);
  void release(std::uint32_t run, TransferId transfer);
  void launch(std::uint32_t pending);
  void complete(std::uint32_t run, TransferId transfer);

  engine::Simulator& sim_;
  engine::FlowNetwork& network_;
  const topology::Topology& topology_;
  topology::Router& router_;
  const NetworkLinks& links_;
  RunnerOptions options_;
  std::uint64_t completed_transfers_ = 0;
  std::vector<std::unique_ptr<Run>> runs_;
  std::vector<std::uint32_t> free_runs_;
  std::vector<Pending> pending_;
  std::vector<std::uint32_t> free_pending_;
  std::unordered_map<std::uint64_t, std::uint32_t> route_by_pair_;  // lookup only, never iterated
  struct Triple {
    std::uint32_t src, via, dst;
    bool operator==(const Triple&) const = default;
  };
  struct TripleHash {
    std::size_t operator()(const Triple& t) const {
      return std::hash<std::uint64_t>{}((static_cast<std::uint64_t>(t.src) << 32 | t.dst) ^
                                        (static_cast<std::uint64_t>(t.via) * 0x9e3779b97f4a7c15u));
    }
  };
  std::unordered_map<Triple, std::uint32_t, TripleHash> route_by_triple_;  // lookup only
  std::vector<CachedRoute> routes_;
  std::vector<PathRange> route_paths_;
  std::vector<engine::LinkId> route_links_;
  std::vector<engine::LinkShare> route_shares_;
  std::vector<engine::LinkShare> shares_scratch_;
  std::vector<engine::WeightedPath> weighted_;  // scratch for multi-path flows
  // Scratch for paths extended by a reduction link, one per path of the flow.
  std::vector<std::vector<engine::LinkId>> extended_;
  // Ceiling links not in use, by capacity (wire bytes per second): a link of the flow network
  // private to one member of one run at a time, so concurrent runs never share one.
  std::map<double, std::vector<std::uint32_t>> free_ceiling_links_;
  std::size_t running_ = 0;
  std::uint64_t serial_ = 0;
};

}  // namespace stepsim::collectives
