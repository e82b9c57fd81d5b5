// Routes between nodes of a Topology: shortest paths (fewest links), with equal-cost multipath
// (ECMP) in these modes:
//  - fabric (the default): each choice between parallel next links is made as the links' class
//    says (LinkClass::multipath, set by the fabric's preset): hashed, or sprayed;
//  - hash: one path per flow. At every node with several equal-cost next links, a deterministic
//    hash of (source, destination, flow key, hop) picks one, as switches do per hop. Two flows
//    may pick the same link while another stays idle: such collisions are real and are kept.
//  - spray: the flow is spread evenly over the next links at every node (packet spraying): one
//    flow with a share of its bytes on each link it may cross (MultipathRoute::shares), which
//    drains at one rate, set by the link where its share is the most loaded.
//  - spread: the flow is split evenly over the equal-cost paths, each part a flow of its own with
//    its own rate. When there are more than `max_paths` of them, `max_paths` paths evenly spaced
//    in the ordered set of all paths are returned (each path is counted once, so the split is even
//    over paths, not per hop).
//
// Policy (documented in docs/topology.md, "Routing"):
//  1. Between two accelerators of the same scale-up domain, traffic stays in the domain.
//  2. Otherwise, when both have NICs, traffic leaves through a NIC of the source (chosen by the
//     hash, or all of them in spread mode) and enters through the NIC of the destination with the
//     same index (rails stay aligned), crossing the scale-out fabric in between.
//  3. Otherwise, shortest paths over the whole graph.
// Intermediate nodes must forward (accelerators do not, except in direct networks). Shortest paths
// prefer direct links, so in a full mesh the direct link is the route.
//
// Speed and memory: no all-pairs tables. In a fat-tree labelled by its builder (ClosLabel), routes
// are computed from the labels (up to a common ancestor, then down) with no search. Elsewhere a
// breadth-first search from the destination gives a distance table, restricted to the scale-up
// domain when rule 1 applies; tables are kept in a least-recently-used cache bounded in bytes.
//
// A Router holds scratch space and the cache: use one per thread. Results never depend on the
// cache.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "topology/lru_cache.hpp"
#include "topology/topology.hpp"

namespace stepsim::topology {

enum class EcmpMode : std::uint8_t { kHash, kSpread, kSpray, kFabric };
// "hash", "spread", "spray", "fabric".
std::string_view to_string(EcmpMode mode);
std::optional<EcmpMode> parse_ecmp_mode(std::string_view text);

// A link of a sprayed route and the share of the flow's bytes that crosses it.
struct LinkShare {
  LinkIndex link;
  double share = 1.0;
};

// A route in fabric, hash or spray mode: one path, or a sprayed set of links.
struct MultipathRoute {
  Path path;                      // when nothing was sprayed: the one path, in order
  std::vector<LinkShare> shares;  // when something was: every link with its share, by link index
  Time latency;                   // the longest path's latency
  bool key_dependent = false;     // a hash chose between links: another flow key may differ
  bool sprayed() const { return !shares.empty(); }
};

// Whether a choice of the router between `link` and its parallel equal-cost links spreads a
// transfer over all of them in `mode`: always in spray mode, as the link's class says in fabric
// mode, never in hash mode (spread mode splits into paths instead).
bool link_sprays(const Topology& topology, LinkIndex link, EcmpMode mode);

struct RouterOptions {
  std::size_t max_paths = 64;             // spread mode: at most this many paths per flow
  std::size_t cache_bytes = 64ull << 20;  // distance tables kept, in bytes
};

struct Routes {
  std::vector<Path> paths;             // equal shares: each carries 1/paths.size() of the flow
  std::uint64_t equal_cost_paths = 0;  // all equal-cost paths (saturates at 2^64-1)
};

class Router {
 public:
  explicit Router(const Topology& topology, RouterOptions options = {});
  ~Router();
  Router(const Router&) = delete;
  Router& operator=(const Router&) = delete;

  // One path from `source` to `destination`, chosen by hashing (ECMP hash mode). Throws
  // std::invalid_argument when there is no route (load-time checks make that impossible between
  // accelerators).
  Path route(NodeId source, NodeId destination, std::uint64_t flow_key = 0);
  // The equal-cost paths (up to max_paths), for spread mode.
  Routes spread(NodeId source, NodeId destination);
  // True when route(source, destination, key) is the same path for every key: no equal-cost
  // choice anywhere on the way (one NIC choice, one next link at every hop). Callers that route
  // many flows between the same pair (the collective runner) cache such routes.
  bool route_is_unique(NodeId source, NodeId destination);
  // route() as a single path in hash mode, spread() in spread mode (fabric and spray modes give
  // one sprayed flow, multipath(): std::invalid_argument here).
  Routes routes(NodeId source, NodeId destination, EcmpMode mode, std::uint64_t flow_key = 0);
  // The route in fabric, hash or spray mode (std::invalid_argument for spread). In hash mode, and
  // wherever the fabric hashes, the path is the one route() gives for the same key.
  MultipathRoute multipath(NodeId source, NodeId destination, std::uint64_t flow_key,
                           EcmpMode mode);
  // True when some link class of the topology sprays: without one, fabric mode is hash mode.
  bool fabric_sprays() const { return fabric_sprays_; }

  // Number of distance tables computed so far (searches), for tests and benchmarks.
  std::size_t searches() const { return searches_; }

 private:
  struct Table;
  struct Segment;
  // Resolves the policy into up to three segments: prefix link, middle (a DAG), suffix link.
  void plan(NodeId source, NodeId destination, std::size_t nic_choice, std::vector<Segment>& out);
  void next_links(const Segment& segment, NodeId at, std::vector<LinkIndex>& out);
  const Table& table(std::uint32_t region, NodeId destination);
  std::uint64_t count_paths(const Segment& segment, NodeId at, std::size_t depth);
  bool clos_up(const Segment& segment, NodeId at) const;
  void walk_hash(const Segment& segment, std::uint64_t seed, Path& path);
  void unrank(const Segment& segment, std::uint64_t rank, Path& path);
  void enumerate(const Segment& segment, NodeId at, Path& prefix, std::vector<Path>& out,
                 std::size_t limit);
  std::size_t nic_choices(NodeId source, NodeId destination) const;
  // Whether a choice among `links` sprays in `mode`: two or more links, each link_sprays().
  bool sprays(std::span<const LinkIndex> links, EcmpMode mode) const;
  struct Reach;
  void spray_segment(const Segment& segment, std::uint64_t seed, EcmpMode mode,
                     std::vector<Reach>& frontier, MultipathRoute& out, bool& split);

  const Topology& topology_;
  RouterOptions options_;
  bool fabric_sprays_ = false;
  std::vector<LinkShare> share_scratch_;
  std::vector<std::uint32_t> local_index_;  // node -> index within its scale-up domain
  // node -> its scale-up group's index (kWhole when none): next_links asks for every neighbour.
  std::vector<std::uint32_t> region_of_;
  std::vector<std::uint32_t> region_size_;  // per scale-up group index (0 for other groups)
  // Distance tables by (region << 32 | destination), bounded in bytes.
  LruCache<std::uint64_t, std::unique_ptr<Table>> tables_;
  std::size_t searches_ = 0;
  // Path-count memo for spread mode.
  std::vector<std::uint64_t> counts_;
  std::vector<std::uint32_t> counted_;
  std::vector<std::vector<LinkIndex>> scratch_;  // next-link lists, one per depth
};

}  // namespace stepsim::topology
