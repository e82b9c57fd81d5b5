#include "topology/router.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <limits>
#include <stdexcept>

namespace stepsim::topology {
namespace {

constexpr std::uint32_t kWhole = std::numeric_limits<std::uint32_t>::max();
constexpr std::uint16_t kUnreached = std::numeric_limits<std::uint16_t>::max();
constexpr std::uint64_t kUnknown = std::numeric_limits<std::uint64_t>::max();
constexpr std::uint64_t kSaturated = std::numeric_limits<std::uint64_t>::max() - 1;

// SplitMix64 finalizer: a fixed, well-mixed hash, so path choices are the same on every machine.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) {
  return a > kSaturated - b ? kSaturated : a + b;
}

}  // namespace

std::string_view to_string(EcmpMode mode) {
  switch (mode) {
    case EcmpMode::kHash:
      return "hash";
    case EcmpMode::kSpread:
      return "spread";
    case EcmpMode::kSpray:
      return "spray";
    case EcmpMode::kFabric:
      return "fabric";
  }
  return "unknown";
}

std::optional<EcmpMode> parse_ecmp_mode(std::string_view text) {
  for (EcmpMode mode : {EcmpMode::kHash, EcmpMode::kSpread, EcmpMode::kSpray, EcmpMode::kFabric})
    if (to_string(mode) == text) return mode;
  return std::nullopt;
}

// Where the traffic of one route stands after some hops: a node, the share of the flow's bytes
// that reaches it, and the longest latency on the way.
struct Router::Reach {
  NodeId node;
  double share = 0.0;
  Time latency;
};

// Hop distances to one destination, within a region (a scale-up domain, or the whole graph).
struct Router::Table {
  std::uint32_t region = kWhole;
  std::vector<std::uint16_t> dist;  // by local index; kUnreached when no route
};

// A piece of a route: a single given link, a shortest-path DAG given by a distance table, or a
// fat-tree crossing given by the Clos labels.
struct Router::Segment {
  enum class Kind : std::uint8_t { kLink, kTable, kClos };
  Kind kind = Kind::kLink;
  LinkIndex link;
  NodeId from;
  NodeId to;
  const Table* table = nullptr;
  std::uint32_t position = 0;  // kClos: the destination's fabric position
};

Router::Router(const Topology& topology, RouterOptions options)
    : topology_(topology), options_(options), tables_(options.cache_bytes) {
  if (options_.max_paths == 0) throw std::invalid_argument("RouterOptions::max_paths must be >= 1");
  const std::size_t n = topology.num_nodes();
  local_index_.assign(n, kWhole);
  region_of_.assign(n, kWhole);
  region_size_.assign(topology.groups().size(), 0);
  for (std::uint32_t g = 0; g < topology.groups().size(); ++g) {
    const Group& group = topology.group(g);
    if (group.kind != GroupKind::kScaleUp) continue;
    for (NodeId member : group.members) {
      local_index_[member.value()] = region_size_[g]++;
      region_of_[member.value()] = g;
    }
  }
  counts_.assign(n, kUnknown);
  for (const LinkClass& c : topology.link_classes())
    fabric_sprays_ = fabric_sprays_ || c.multipath == Multipath::kSpray;
}

Router::~Router() = default;

const Router::Table& Router::table(std::uint32_t region, NodeId destination) {
  const std::uint64_t key = (static_cast<std::uint64_t>(region) << 32) | destination.value();
  if (const std::unique_ptr<Table>* cached = tables_.find(key)) return **cached;
  ++searches_;
  auto table = std::make_unique<Table>();
  table->region = region;
  const bool whole = region == kWhole;
  const auto local = [&](std::uint32_t node) { return whole ? node : local_index_[node]; };
  const auto inside = [&](std::uint32_t node) {
    return whole || topology_.group_of(NodeId(node), GroupKind::kScaleUp) == region;
  };
  table->dist.assign(whole ? topology_.num_nodes() : region_size_[region], kUnreached);
  // Breadth-first search backwards from the destination. A node is expanded (its predecessors
  // reached through it) only if it is the destination or forwards traffic.
  std::vector<std::uint32_t> queue{destination.value()};
  table->dist[local(destination.value())] = 0;
  for (std::size_t head = 0; head < queue.size(); ++head) {
    const std::uint32_t v = queue[head];
    if (v != destination.value() && !topology_.node(NodeId(v)).forwards) continue;
    const std::uint16_t next = static_cast<std::uint16_t>(table->dist[local(v)] + 1);
    if (next == kUnreached) throw std::logic_error("route longer than 65534 hops");
    for (LinkIndex l : topology_.in_links(NodeId(v))) {
      const std::uint32_t u = topology_.source(l).value();
      if (!inside(u) || table->dist[local(u)] != kUnreached) continue;
      table->dist[local(u)] = next;
      queue.push_back(u);
    }
  }
  // What a cached table costs: its key, the table and its heap block (about 64 bytes of overhead).
  const std::size_t bytes =
      sizeof(key) + sizeof(Table) + 64 + table->dist.size() * sizeof(std::uint16_t);
  return *tables_.insert(key, std::move(table), bytes);
}

std::size_t Router::nic_choices(NodeId source, NodeId destination) const {
  const auto gs = topology_.group_of(source, GroupKind::kScaleUp);
  if (gs && gs == topology_.group_of(destination, GroupKind::kScaleUp)) return 1;
  const auto ns = topology_.nics(source);
  if (ns.empty() || topology_.nics(destination).empty()) return 1;
  return ns.size();
}

void Router::plan(NodeId source, NodeId destination, std::size_t nic_choice,
                  std::vector<Segment>& out) {
  out.clear();
  if (source == destination) return;
  const auto middle = [&](NodeId from, NodeId to, std::uint32_t region) {
    Segment s;
    s.from = from;
    s.to = to;
    if (region == kWhole && topology_.has_clos() && topology_.clos(from).tier == 0 &&
        topology_.clos(to).tier == 0) {
      s.kind = Segment::Kind::kClos;
      s.position = topology_.clos(to).lo;
    } else {
      s.kind = Segment::Kind::kTable;
      s.table = &table(region, to);
    }
    return s;
  };
  const auto gs = topology_.group_of(source, GroupKind::kScaleUp);
  if (gs && gs == topology_.group_of(destination, GroupKind::kScaleUp)) {
    out.push_back(middle(source, destination, *gs));
    return;
  }
  const auto ns = topology_.nics(source);
  const auto nd = topology_.nics(destination);
  if (!ns.empty() && !nd.empty()) {
    const NicAttachment& a = ns[nic_choice % ns.size()];
    const NicAttachment& b = nd[(nic_choice % ns.size()) % nd.size()];
    Segment first;
    first.link = a.to_nic;
    out.push_back(first);
    if (a.nic != b.nic) out.push_back(middle(a.nic, b.nic, kWhole));
    Segment last;
    last.link = b.from_nic;
    out.push_back(last);
    return;
  }
  out.push_back(middle(source, destination, kWhole));
}

void Router::next_links(const Segment& segment, NodeId at, std::vector<LinkIndex>& out) {
  out.clear();
  if (at == segment.to) return;
  const Topology::LinkRange range = topology_.out_links(at);
  if (segment.kind == Segment::Kind::kClos) {
    const ClosLabel& here = topology_.clos(at);
    const bool down = here.covers(segment.position);
    for (std::uint32_t i = range.first; i < range.first + range.count; ++i) {
      const ClosLabel& there = topology_.clos(topology_.target(LinkIndex(i)));
      if (there.tier < 0) continue;
      if (down ? (there.tier < here.tier && there.covers(segment.position))
               : there.tier > here.tier) {
        out.emplace_back(i);
      }
    }
    return;
  }
  const Table& t = *segment.table;
  const bool whole = t.region == kWhole;
  const auto dist_of = [&](NodeId v) -> std::uint16_t {
    if (whole) return t.dist[v.value()];
    if (region_of_[v.value()] != t.region) return kUnreached;
    return t.dist[local_index_[v.value()]];
  };
  const std::uint16_t d = dist_of(at);
  if (d == kUnreached || d == 0) return;
  for (std::uint32_t i = range.first; i < range.first + range.count; ++i) {
    const NodeId v = topology_.target(LinkIndex(i));
    if (dist_of(v) != d - 1) continue;
    if (v != segment.to && !topology_.node(v).forwards) continue;
    out.emplace_back(i);
  }
}

void Router::walk_hash(const Segment& segment, std::uint64_t seed, Path& path) {
  if (segment.kind == Segment::Kind::kLink) {
    path.push_back(segment.link);
    return;
  }
  if (scratch_.empty()) scratch_.resize(1);
  std::vector<LinkIndex>& next = scratch_[0];
  NodeId at = segment.from;
  for (std::uint64_t hop = 0; at != segment.to; ++hop) {
    next_links(segment, at, next);
    if (next.empty()) {
      throw std::invalid_argument(fmt::format(
          "no route from '{}' to '{}'", topology_.name(segment.from), topology_.name(segment.to)));
    }
    const LinkIndex chosen = next.size() == 1 ? next[0] : next[mix(seed + hop) % next.size()];
    path.push_back(chosen);
    at = topology_.target(chosen);
  }
}

std::uint64_t Router::count_paths(const Segment& segment, NodeId at, std::size_t depth) {
  if (at == segment.to) return 1;
  std::uint64_t& memo = counts_[at.value()];
  if (memo != kUnknown) return memo;
  if (scratch_.size() <= depth) scratch_.resize(depth + 1);
  next_links(segment, at, scratch_[depth]);
  std::uint64_t total = 0;
  if (clos_up(segment, at) && !scratch_[depth].empty()) {
    // Fat-tree builders guarantee that every up-neighbour leads to as many paths as any other, so
    // one of them is counted and multiplied (the search is then linear in tiers x radix).
    const std::uint64_t each =
        count_paths(segment, topology_.target(scratch_[depth][0]), depth + 1);
    const std::uint64_t n = scratch_[depth].size();
    total = each != 0 && n > kSaturated / each ? kSaturated : n * each;
  } else {
    for (std::size_t i = 0; i < scratch_[depth].size(); ++i) {
      const NodeId next = topology_.target(scratch_[depth][i]);
      total = saturating_add(total, count_paths(segment, next, depth + 1));
    }
  }
  counts_[at.value()] = total;
  counted_.push_back(at.value());
  return total;
}

bool Router::clos_up(const Segment& segment, NodeId at) const {
  return segment.kind == Segment::Kind::kClos && !topology_.clos(at).covers(segment.position);
}

void Router::unrank(const Segment& segment, std::uint64_t rank, Path& path) {
  std::vector<LinkIndex> next;
  NodeId at = segment.from;
  while (at != segment.to) {
    next_links(segment, at, next);
    LinkIndex chosen = next.back();
    if (clos_up(segment, at)) {
      const std::uint64_t each = count_paths(segment, topology_.target(next[0]), 0);
      chosen = next[std::min<std::uint64_t>(rank / each, next.size() - 1)];
      rank %= each;
    } else {
      for (LinkIndex l : next) {
        const std::uint64_t c = count_paths(segment, topology_.target(l), 0);
        if (rank < c) {
          chosen = l;
          break;
        }
        rank -= c;
      }
    }
    path.push_back(chosen);
    at = topology_.target(chosen);
  }
}

Path Router::route(NodeId source, NodeId destination, std::uint64_t flow_key) {
  const std::uint64_t seed =
      mix(mix(source.value()) ^ (std::uint64_t{destination.value()} << 32) ^ mix(flow_key));
  std::vector<Segment> segments;
  plan(source, destination, static_cast<std::size_t>(mix(seed ^ 0x5eed)), segments);
  Path path;
  for (std::size_t i = 0; i < segments.size(); ++i)
    walk_hash(segments[i], seed + 977 * i, path);
  return path;
}

bool Router::route_is_unique(NodeId source, NodeId destination) {
  if (source == destination) return true;
  if (nic_choices(source, destination) != 1) return false;
  std::vector<Segment> segments;
  plan(source, destination, 0, segments);
  if (scratch_.empty()) scratch_.resize(1);
  std::vector<LinkIndex>& next = scratch_[0];
  for (const Segment& segment : segments) {
    if (segment.kind == Segment::Kind::kLink) continue;
    for (NodeId at = segment.from; at != segment.to; at = topology_.target(next[0])) {
      next_links(segment, at, next);
      // No route is not unique either: route() reports it with its own error.
      if (next.size() != 1) return false;
    }
  }
  return true;
}

Routes Router::spread(NodeId source, NodeId destination) {
  Routes result;
  if (source == destination) {
    result.paths.emplace_back();
    result.equal_cost_paths = 1;
    return result;
  }
  const std::size_t choices = nic_choices(source, destination);
  const std::size_t per_choice = std::max<std::size_t>(1, options_.max_paths / choices);
  std::vector<Segment> segments;
  for (std::size_t choice = 0; choice < choices && result.paths.size() < options_.max_paths;
       ++choice) {
    plan(source, destination, choice, segments);
    // At most one segment is a DAG; the others are single links.
    std::size_t dag = segments.size();
    for (std::size_t i = 0; i < segments.size(); ++i) {
      if (segments[i].kind != Segment::Kind::kLink) dag = i;
    }
    std::uint64_t total = 1;
    if (dag < segments.size()) total = count_paths(segments[dag], segments[dag].from, 0);
    if (total == 0) {
      throw std::invalid_argument(fmt::format("no route from '{}' to '{}'", topology_.name(source),
                                              topology_.name(destination)));
    }
    result.equal_cost_paths = saturating_add(result.equal_cost_paths, total);
    const std::uint64_t take = std::min<std::uint64_t>(total, per_choice);
    const std::uint64_t step = total / take;
    for (std::uint64_t i = 0; i < take; ++i) {
      Path path;
      for (std::size_t s = 0; s < segments.size(); ++s) {
        if (s == dag) {
          unrank(segments[s], i * step + step / 2 * (take < total ? 1 : 0), path);
        } else {
          path.push_back(segments[s].link);
        }
      }
      result.paths.push_back(std::move(path));
    }
    for (std::uint32_t v : counted_)
      counts_[v] = kUnknown;
    counted_.clear();
  }
  return result;
}

Routes Router::routes(NodeId source, NodeId destination, EcmpMode mode, std::uint64_t flow_key) {
  if (mode == EcmpMode::kSpread) return spread(source, destination);
  if (mode != EcmpMode::kHash)
    throw std::invalid_argument("Router::routes: fabric and spray modes have multipath()");
  Routes result;
  result.paths.push_back(route(source, destination, flow_key));
  result.equal_cost_paths = 1;
  return result;
}

bool link_sprays(const Topology& topology, LinkIndex link, EcmpMode mode) {
  switch (mode) {
    case EcmpMode::kSpray:
      return true;
    case EcmpMode::kFabric:
      return topology.link_class(link).multipath == Multipath::kSpray;
    case EcmpMode::kHash:
    case EcmpMode::kSpread:
      return false;
  }
  return false;
}

bool Router::sprays(std::span<const LinkIndex> links, EcmpMode mode) const {
  return links.size() >= 2 && std::all_of(links.begin(), links.end(), [&](LinkIndex l) {
           return link_sprays(topology_, l, mode);
         });
}

// One segment, level by level: every reached node passes its share on to its next links, split
// evenly where it sprays, whole to the hashed link where it hashes (the hash of walk_hash, so
// that a route with no spraying is route()'s path). All paths of a segment are equally long, so a
// level holds the nodes at the same distance from the segment's end.
void Router::spray_segment(const Segment& segment, std::uint64_t seed, EcmpMode mode,
                           std::vector<Reach>& frontier, MultipathRoute& out, bool& split) {
  if (segment.kind == Segment::Kind::kLink) {
    for (Reach& r : frontier) {
      share_scratch_.push_back({segment.link, r.share});
      r.node = topology_.target(segment.link);
      r.latency += topology_.latency(segment.link);
    }
    if (!split) out.path.push_back(segment.link);
    return;
  }
  if (scratch_.empty()) scratch_.resize(1);
  std::vector<LinkIndex>& next = scratch_[0];
  std::vector<Reach> reached;
  for (std::uint64_t hop = 0; !(frontier.size() == 1 && frontier[0].node == segment.to); ++hop) {
    reached.clear();
    for (const Reach& r : frontier) {
      next_links(segment, r.node, next);
      if (next.empty()) {
        throw std::invalid_argument(fmt::format("no route from '{}' to '{}'",
                                                topology_.name(segment.from),
                                                topology_.name(segment.to)));
      }
      const bool spray = sprays(next, mode);
      if (spray) split = true;
      if (!spray && next.size() > 1) out.key_dependent = true;
      const std::size_t first = spray ? 0 : (next.size() == 1 ? 0 : mix(seed + hop) % next.size());
      const std::size_t count = spray ? next.size() : 1;
      const double share = r.share / static_cast<double>(count);
      for (std::size_t i = first; i < first + count; ++i) {
        share_scratch_.push_back({next[i], share});
        reached.push_back(
            {topology_.target(next[i]), share, r.latency + topology_.latency(next[i])});
        if (!split) out.path.push_back(next[i]);
      }
    }
    // Paths that met again go on as one. Their shares are summed in increasing order, so that
    // nodes reached by the same shares get the same bits (link_symmetry.hpp relies on it).
    std::sort(reached.begin(), reached.end(), [](const Reach& a, const Reach& b) {
      return a.node < b.node || (a.node == b.node && a.share < b.share);
    });
    frontier.clear();
    for (const Reach& r : reached) {
      if (!frontier.empty() && frontier.back().node == r.node) {
        frontier.back().share += r.share;
        frontier.back().latency = std::max(frontier.back().latency, r.latency);
      } else {
        frontier.push_back(r);
      }
    }
  }
}

MultipathRoute Router::multipath(NodeId source, NodeId destination, std::uint64_t flow_key,
                                 EcmpMode mode) {
  if (mode == EcmpMode::kSpread)
    throw std::invalid_argument("Router::multipath: spread mode has routes(), not one route");
  MultipathRoute out;
  if (source == destination) return out;
  const std::uint64_t seed =
      mix(mix(source.value()) ^ (std::uint64_t{destination.value()} << 32) ^ mix(flow_key));
  // The NIC choice (rule 2): sprayed over the source's NICs when their links spray, else hashed.
  const std::size_t choices = nic_choices(source, destination);
  std::vector<LinkIndex> nic_links;
  if (choices > 1) {
    for (const NicAttachment& a : topology_.nics(source))
      nic_links.push_back(a.to_nic);
  }
  const bool spray_nics = choices > 1 && sprays(nic_links, mode);
  if (choices > 1 && !spray_nics) out.key_dependent = true;
  bool split = spray_nics;
  share_scratch_.clear();
  std::vector<Segment> segments;
  std::vector<Reach> frontier;
  const std::size_t hashed = static_cast<std::size_t>(mix(seed ^ 0x5eed));
  for (std::size_t c = 0; c < (spray_nics ? choices : 1); ++c) {
    plan(source, destination, spray_nics ? c : hashed, segments);
    frontier.assign(1, Reach{source, spray_nics ? 1.0 / static_cast<double>(choices) : 1.0, {}});
    for (std::size_t i = 0; i < segments.size(); ++i)
      spray_segment(segments[i], seed + 977 * i, mode, frontier, out, split);
    for (const Reach& r : frontier)
      out.latency = std::max(out.latency, r.latency);
  }
  if (split) {
    out.path.clear();
    // (Shares of one link summed in increasing order, as above.)
    std::sort(share_scratch_.begin(), share_scratch_.end(),
              [](const LinkShare& a, const LinkShare& b) {
                return a.link < b.link || (a.link == b.link && a.share < b.share);
              });
    for (const LinkShare& s : share_scratch_) {
      if (!out.shares.empty() && out.shares.back().link == s.link) {
        out.shares.back().share += s.share;
      } else {
        out.shares.push_back(s);
      }
    }
  }
  return out;
}

}  // namespace stepsim::topology
