#include "sim/collectives/runner/placement.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <charconv>
#include <limits>
#include <map>
#include <optional>
#include <span>

#include "sim/collectives/runner/mesh_detection.hpp"
#include "sim/common/input_error.hpp"

namespace stepsim::collectives {

using topology::GroupKind;
using topology::NodeId;
using topology::NodeKind;

namespace {

constexpr std::uint32_t kUnreached = std::numeric_limits<std::uint32_t>::max();

// A switch of the scale-out fabric that reduces (not one inside a scale-up domain: NVLS).
bool fabric_reducer(const topology::Topology& topology, NodeId node) {
  return topology.kind(node) == NodeKind::kSwitch && topology.node(node).in_network_reduction &&
         !topology.group_of(node, GroupKind::kScaleUp);
}

// Hops from `from` to every node over reducing fabric switches; NICs are reached but not crossed.
// `dist` is reused between calls (sized to the topology, kUnreached where not reached).
void reducer_distances(const topology::Topology& topology, NodeId from,
                       std::vector<std::uint32_t>& dist, std::vector<NodeId>& queue) {
  std::fill(dist.begin(), dist.end(), kUnreached);
  queue.assign({from});
  dist[from.value()] = 0;
  for (std::size_t head = 0; head < queue.size(); ++head) {
    const NodeId node = queue[head];
    if (head > 0 && !fabric_reducer(topology, node)) continue;  // a NIC: an end
    const auto range = topology.out_links(node);
    for (std::uint32_t l = range.first; l < range.first + range.count; ++l) {
      const NodeId next = topology.target(topology::LinkIndex(l));
      if (dist[next.value()] != kUnreached) continue;
      if (!fabric_reducer(topology, next) && topology.kind(next) != NodeKind::kNic) continue;
      dist[next.value()] = dist[node.value()] + 1;
      queue.push_back(next);
    }
  }
}

// The members on each rail (their position among the accelerators of their scale-up domain),
// or nullopt when a member has no domain or not one NIC, or the members are all in one domain.
std::optional<std::map<std::uint32_t, std::vector<std::uint32_t>>> rails_across_domains(
    const topology::Topology& topology, std::span<const NodeId> members) {
  std::map<std::uint32_t, std::vector<std::uint32_t>> rails;  // rail -> members
  std::optional<std::uint32_t> first_domain;
  bool several_domains = false;
  for (std::uint32_t i = 0; i < members.size(); ++i) {
    const auto g = topology.group_of(members[i], GroupKind::kScaleUp);
    if (!g || topology.nics(members[i]).size() != 1) return std::nullopt;
    if (!first_domain) first_domain = *g;
    several_domains = several_domains || *g != *first_domain;
    std::uint32_t position = 0;
    for (NodeId node : topology.group(*g).members) {
      if (node == members[i]) break;
      if (topology.kind(node) == NodeKind::kAccelerator) ++position;
    }
    rails[position].push_back(i);
  }
  if (!several_domains) return std::nullopt;
  return rails;
}

// Whether a reducing fabric switch is one hop from `nic`.
bool beside_reducer(const topology::Topology& topology, NodeId nic) {
  bool beside = false;
  const auto range = topology.out_links(nic);
  for (std::uint32_t l = range.first; l < range.first + range.count; ++l)
    beside = beside || fabric_reducer(topology, topology.target(topology::LinkIndex(l)));
  return beside;
}

// The SHARP trees of the rails, built one rail after another: the root of each (the reducing
// switch nearest the rail's farthest NIC) and the paths of its NICs to it.
class RailTrees {
 public:
  RailTrees(const topology::Topology& topology, std::span<const NodeId> members)
      : topology_(topology),
        members_(members),
        dist_(topology.num_nodes()),
        root_dist_(topology.num_nodes()) {
    tree_.member_switch.assign(members.size(), NetworkTree::kNone);
  }

  // Adds the tree of the rail of members `on_rail`; false when its NICs are not joined by
  // reducing switches.
  bool add_rail(std::span<const std::uint32_t> on_rail) {
    const std::optional<NodeId> root = rail_root(on_rail);
    if (!root) return false;
    reducer_distances(topology_, *root, root_dist_, queue_);
    index_.clear();  // (each rail's switches are its own)
    for (std::uint32_t i : on_rail) {
      NodeId up = toward_root(nic(i));
      tree_.member_switch[i] = tree_switch(up);
      while (up != *root) {
        const std::uint32_t child = tree_switch(up);
        if (tree_.switch_parent[child] != NetworkTree::kNone) break;  // joined a known path
        up = toward_root(up);
        tree_.switch_parent[child] = tree_switch(up);
      }
    }
    return true;
  }

  void move_to(Placement& placement) && {
    placement.network_tree = std::move(tree_);
    placement.network_switches = std::move(switches_);
  }

 private:
  NodeId nic(std::uint32_t member) const { return topology_.nics(members_[member]).front().nic; }

  // The reducing switch whose farthest NIC of the rail is nearest, lowest id among equals.
  std::optional<NodeId> rail_root(std::span<const std::uint32_t> on_rail) {
    const NodeId first_nic = nic(on_rail.front());
    reducer_distances(topology_, first_nic, dist_, queue_);
    std::vector<NodeId> candidates;
    for (NodeId node : queue_)
      if (node != first_nic && fabric_reducer(topology_, node)) candidates.push_back(node);
    std::stable_sort(candidates.begin(), candidates.end(), [&](NodeId a, NodeId b) {
      return dist_[a.value()] != dist_[b.value()] ? dist_[a.value()] < dist_[b.value()]
                                                  : a.value() < b.value();
    });
    std::optional<NodeId> root;
    std::uint32_t best = kUnreached;
    for (NodeId candidate : candidates) {
      if (dist_[candidate.value()] >= best) break;  // its farthest NIC is at least that far
      reducer_distances(topology_, candidate, root_dist_, queue_);
      std::uint32_t farthest = 0;
      for (std::uint32_t i : on_rail)
        farthest = std::max(farthest, root_dist_[nic(i).value()]);
      if (farthest < best) {
        best = farthest;
        root = candidate;
      }
    }
    return root;
  }

  // The neighbour switch of `node` one hop nearer the root, lowest id among equals.
  NodeId toward_root(NodeId node) const {
    std::optional<NodeId> up;
    const auto range = topology_.out_links(node);
    for (std::uint32_t l = range.first; l < range.first + range.count; ++l) {
      const NodeId next = topology_.target(topology::LinkIndex(l));
      if (!fabric_reducer(topology_, next) ||
          root_dist_[next.value()] + 1 != root_dist_[node.value()])
        continue;
      if (!up || next.value() < up->value()) up = next;
    }
    return *up;  // exists: `node` was reached from the root over such switches
  }

  // The tree switch of fabric switch `node` on this rail, added when new.
  std::uint32_t tree_switch(NodeId node) {
    const auto [it, added] =
        index_.emplace(node.value(), static_cast<std::uint32_t>(switches_.size()));
    if (added) {
      switches_.push_back(node);
      tree_.switch_parent.push_back(NetworkTree::kNone);
    }
    return it->second;
  }

  const topology::Topology& topology_;
  std::span<const NodeId> members_;
  NetworkTree tree_;
  std::vector<NodeId> switches_;
  std::map<std::uint32_t, std::uint32_t> index_;  // node -> this rail's tree switch
  std::vector<std::uint32_t> dist_, root_dist_;
  std::vector<NodeId> queue_;
};

// The SHARP trees of the group's rails (placement.hpp says how they are chosen), or none when
// the group does not span several domains, a member has no single NIC, or some rail's NICs are
// not joined by reducing switches.
void find_network_trees(const topology::Topology& topology, Placement& placement) {
  const std::span<const NodeId> members = placement.members;
  const auto rails = rails_across_domains(topology, members);
  if (!rails) return;
  // No SHARP where the first member's NIC has no reducing switch beside it (the common case).
  if (!beside_reducer(topology, topology.nics(members.front()).front().nic)) return;
  RailTrees trees(topology, members);
  for (const auto& [rail, on_rail] : *rails)
    if (!trees.add_rail(on_rail)) return;
  std::move(trees).move_to(placement);
}

}  // namespace

Placement place_group(const topology::Topology& topology, std::span<const std::uint32_t> ranks,
                      const PlacementOptions& options) {
  Placement placement;
  const auto& accelerators = topology.accelerators();
  std::vector<bool> seen(accelerators.size(), false);
  for (std::uint32_t r : ranks) {
    if (r >= accelerators.size())
      throw InputError(fmt::format("rank {} is beyond topology '{}', which has {} accelerators", r,
                                   topology.name(), accelerators.size()));
    if (seen[r]) throw InputError(fmt::format("rank {} appears twice in the group", r));
    seen[r] = true;
    placement.members.push_back(accelerators[r]);
  }
  if (placement.members.empty()) return placement;
  // Each domain's reducing switch, domains numbered as group_shape numbers them.
  std::map<std::uint32_t, std::size_t> seen_domain;
  for (NodeId m : placement.members) {
    const auto g = topology.group_of(m, GroupKind::kScaleUp);
    if (!g) {
      placement.domain_switches.clear();
      break;
    }
    if (!seen_domain.emplace(*g, seen_domain.size()).second) continue;
    std::optional<NodeId> reducer;
    for (NodeId node : topology.group(*g).members)
      if (topology.kind(node) == NodeKind::kSwitch && topology.node(node).in_network_reduction) {
        reducer = node;
        break;
      }
    if (!reducer) {
      placement.domain_switches.clear();
      break;
    }
    placement.domain_switches.push_back(*reducer);
  }
  if (placement.domain_switches.size() != seen_domain.size()) placement.domain_switches.clear();
  if (options.network_trees) find_network_trees(topology, placement);
  // The reducing switch must be in the scale-up domain of every member.
  const auto domain = topology.group_of(placement.members.front(), GroupKind::kScaleUp);
  if (!domain) return placement;
  for (NodeId m : placement.members)
    if (topology.group_of(m, GroupKind::kScaleUp) != domain) return placement;
  for (NodeId node : topology.group(*domain).members)
    if (topology.kind(node) == NodeKind::kSwitch && topology.node(node).in_network_reduction) {
      placement.reduction_switch = node;
      break;
    }
  return placement;
}

GroupShape group_shape(const topology::Topology& topology, const Placement& placement) {
  GroupShape shape;
  shape.size = static_cast<std::uint32_t>(placement.members.size());
  shape.in_switch_reduction = placement.reduction_switch.has_value();
  shape.network_tree = placement.network_tree;
  shape.nccl = topology.collective_library() == topology::CollectiveLibrary::kNccl;
  // Dense domain numbers in order of first appearance; a member without a scale-up group is alone.
  std::map<std::int64_t, std::uint32_t> number;
  for (std::size_t i = 0; i < placement.members.size(); ++i) {
    const auto g = topology.group_of(placement.members[i], GroupKind::kScaleUp);
    const std::int64_t key = g ? static_cast<std::int64_t>(*g) : -1 - static_cast<std::int64_t>(i);
    const auto [it, added] = number.emplace(key, static_cast<std::uint32_t>(number.size()));
    shape.domain.push_back(it->second);
  }
  // Rails: a member's position among its domain's accelerators, when it has exactly one NIC.
  bool any_rail = false;
  std::vector<std::uint32_t> rail(placement.members.size(), GroupShape::kNoRail);
  for (std::size_t i = 0; i < placement.members.size(); ++i) {
    const NodeId m = placement.members[i];
    const auto g = topology.group_of(m, GroupKind::kScaleUp);
    if (!g || topology.nics(m).size() != 1) continue;
    std::uint32_t position = 0;
    for (NodeId node : topology.group(*g).members) {
      if (node == m) break;
      if (topology.kind(node) == NodeKind::kAccelerator) ++position;
    }
    rail[i] = position;
    any_rail = true;
  }
  if (any_rail) shape.rail = std::move(rail);
  shape.mesh = detect_full_mesh(topology, placement.members);
  if (placement.members.empty()) return shape;
  // The tuner's bandwidths, from the first member: its links into its scale-up domain, and its
  // NICs' links into the fabric; a fabric switch that reduces there means SHARP.
  const NodeId first = placement.members.front();
  const auto first_domain = topology.group_of(first, GroupKind::kScaleUp);
  const auto range = topology.out_links(first);
  for (std::uint32_t l = range.first; l < range.first + range.count; ++l) {
    const topology::LinkIndex link(l);
    const NodeId target = topology.target(link);
    if (first_domain && topology.group_of(target, GroupKind::kScaleUp) == first_domain &&
        topology.kind(target) != NodeKind::kNic)
      shape.scale_up_bandwidth = shape.scale_up_bandwidth + topology.effective_bandwidth(link);
  }
  for (const topology::NicAttachment& nic : topology.nics(first)) {
    const auto up = topology.out_links(nic.nic);
    for (std::uint32_t l = up.first; l < up.first + up.count; ++l) {
      const topology::LinkIndex link(l);
      const NodeId target = topology.target(link);
      if (target == first) continue;
      shape.scale_out_bandwidth = shape.scale_out_bandwidth + topology.effective_bandwidth(link);
      if (topology.kind(target) == NodeKind::kSwitch && topology.node(target).in_network_reduction)
        shape.network_reduction = true;
    }
  }
  // NVLS in every domain of the group.
  shape.domain_in_switch = true;
  std::map<std::uint32_t, bool> domain_has_switch;
  for (NodeId m : placement.members) {
    const auto g = topology.group_of(m, GroupKind::kScaleUp);
    if (!g) {
      shape.domain_in_switch = false;
      break;
    }
    auto [it, added] = domain_has_switch.emplace(*g, false);
    if (added)
      for (NodeId node : topology.group(*g).members)
        if (topology.kind(node) == NodeKind::kSwitch && topology.node(node).in_network_reduction)
          it->second = true;
    if (!it->second) {
      shape.domain_in_switch = false;
      break;
    }
  }
  return shape;
}

std::vector<std::uint32_t> parse_ranks(std::string_view text, std::uint32_t available,
                                       std::string_view option) {
  auto number = [&](std::string_view item) {
    std::uint32_t value = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size())
      throw InputError(
          fmt::format("{} '{}': '{}' is not a rank number (expected N, a list "
                      "0,1,2, ranges 0-7,16-23 or 'all')",
                      option, text, item));
    return value;
  };
  std::vector<std::uint32_t> ranks;
  if (text == "all") {
    for (std::uint32_t r = 0; r < available; ++r)
      ranks.push_back(r);
    return ranks;
  }
  const bool is_count = text.find_first_of(",-") == std::string_view::npos;
  if (is_count) {
    const std::uint32_t n = number(text);
    if (n == 0)
      throw InputError(fmt::format(
          "{} 0: a count N means the first N ranks, so 0 means none; for rank 0 alone write 0-0",
          option));
    if (n > available)
      throw InputError(fmt::format("{} {}: there are only {} accelerators", option, n, available));
    for (std::uint32_t r = 0; r < n; ++r)
      ranks.push_back(r);
    return ranks;
  }
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t comma = std::min(text.find(',', pos), text.size());
    const std::string_view item = text.substr(pos, comma - pos);
    const std::size_t dash = item.find('-');
    const std::uint32_t first = number(item.substr(0, dash));
    const std::uint32_t last =
        dash == std::string_view::npos ? first : number(item.substr(dash + 1));
    if (last < first)
      throw InputError(fmt::format("{} '{}': range '{}' runs backwards", option, text, item));
    for (std::uint32_t r = first; r <= last; ++r) {
      if (r >= available)
        throw InputError(fmt::format("{} '{}': rank {} is beyond the {} accelerators", option, text,
                                     r, available));
      ranks.push_back(r);
    }
    pos = comma + 1;
  }
  return ranks;
}

}  // namespace stepsim::collectives
