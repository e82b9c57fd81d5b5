#include "topology/topology_builder.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <deque>
#include <stdexcept>

#include "sim/common/input_error.hpp"

namespace stepsim::topology {
namespace {

constexpr std::uint32_t kNone = NodeId::kInvalid;

// Nodes reached from `start` following links forward (or backward), entering any node but
// continuing only from `start` and from nodes that forward. `allowed` (when not empty) restricts
// the search to the nodes marked true.
std::vector<bool> reach(const std::vector<NodeInfo>& nodes,
                        const std::vector<std::uint32_t>& offsets,
                        const std::vector<LinkIndex>& order, const std::vector<LinkInfo>& links,
                        NodeId start, bool backward, const std::vector<bool>& allowed) {
  std::vector<bool> seen(nodes.size(), false);
  std::deque<std::uint32_t> queue{start.value()};
  seen[start.value()] = true;
  while (!queue.empty()) {
    const std::uint32_t u = queue.front();
    queue.pop_front();
    if (u != start.value() && !nodes[u].forwards) continue;
    for (std::uint32_t i = offsets[u]; i < offsets[u + 1]; ++i) {
      const LinkInfo& l = links[order[i].value()];
      const std::uint32_t v = backward ? l.source.value() : l.target.value();
      if (seen[v] || (!allowed.empty() && !allowed[v])) continue;
      seen[v] = true;
      queue.push_back(v);
    }
  }
  return seen;
}

}  // namespace

TopologyBuilder::TopologyBuilder(std::string name) : name_(std::move(name)) {}

NodeId TopologyBuilder::add_node(std::string name, NodeKind kind, NodeOptions options) {
  if (by_name_.count(name) != 0) {
    throw std::logic_error(fmt::format("topology '{}': node '{}' added twice", name_, name));
  }
  const NodeId id(static_cast<std::uint32_t>(nodes_.size()));
  NodeInfo info;
  info.name = std::move(name);
  info.kind = kind;
  info.in_network_reduction = options.in_network_reduction;
  info.forwards = options.forwards.value_or(kind != NodeKind::kAccelerator);
  info.owner = options.owner;
  by_name_.emplace(info.name, id);
  nodes_.push_back(std::move(info));
  return id;
}

std::optional<NodeId> TopologyBuilder::find(std::string_view name) const {
  const auto it = by_name_.find(std::string(name));
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

std::uint16_t TopologyBuilder::link_class(std::string_view name) {
  for (std::size_t i = 0; i < classes_.size(); ++i) {
    if (classes_[i].name == name) return static_cast<std::uint16_t>(i);
  }
  classes_.push_back(LinkClass{std::string(name), std::nullopt});
  return static_cast<std::uint16_t>(classes_.size() - 1);
}

void TopologyBuilder::set_efficiency(std::uint16_t link_class, double efficiency) {
  if (!(efficiency > 0 && efficiency <= 1)) {
    throw std::logic_error(fmt::format("link class efficiency {} is outside (0, 1]", efficiency));
  }
  classes_.at(link_class).efficiency = efficiency;
}

void TopologyBuilder::add_link(NodeId from, NodeId to, BytesPerSecond bandwidth, Time latency,
                               std::uint16_t link_class) {
  if (from.value() >= nodes_.size() || to.value() >= nodes_.size() || from == to) {
    throw std::logic_error(fmt::format("topology '{}': bad link endpoints", name_));
  }
  if (!(bandwidth.value() > 0) || latency < Time::zero() || link_class >= classes_.size()) {
    throw std::logic_error(
        fmt::format("topology '{}': link {} -> {} has a bad bandwidth, latency "
                    "or class",
                    name_, nodes_[from.value()].name, nodes_[to.value()].name));
  }
  links_.push_back(LinkInfo{from, to, bandwidth, latency, link_class});
}

void TopologyBuilder::add_duplex(NodeId a, NodeId b, BytesPerSecond bandwidth, Time latency,
                                 std::uint16_t link_class) {
  add_link(a, b, bandwidth, latency, link_class);
  add_link(b, a, bandwidth, latency, link_class);
}

std::uint32_t TopologyBuilder::add_group(GroupKind kind, std::string name,
                                         std::vector<NodeId> members) {
  auto& of = group_of_[static_cast<std::size_t>(kind)];
  of.resize(nodes_.size(), kNone);
  const auto index = static_cast<std::uint32_t>(groups_.size());
  for (NodeId m : members) {
    if (of[m.value()] != kNone) {
      throw std::logic_error(fmt::format("node '{}' is already in {} group '{}'",
                                         nodes_[m.value()].name, to_string(kind),
                                         groups_[of[m.value()]].name));
    }
    of[m.value()] = index;
  }
  groups_.push_back(Group{kind, std::move(name), std::move(members)});
  return index;
}

std::optional<std::uint32_t> TopologyBuilder::group_of(NodeId node, GroupKind kind) const {
  const auto& of = group_of_[static_cast<std::size_t>(kind)];
  if (node.value() >= of.size() || of[node.value()] == kNone) return std::nullopt;
  return of[node.value()];
}

void TopologyBuilder::set_clos_label(NodeId node, ClosLabel label) {
  if (clos_.size() < nodes_.size()) clos_.resize(nodes_.size());
  clos_[node.value()] = label;
}

void TopologyBuilder::index_links(Topology& t) const {
  const std::size_t n = nodes_.size();
  const std::size_t m = links_.size();
  // Number links by source (stable), the edge order of the compressed-sparse-row graph.
  t.out_offsets_.assign(n + 1, 0);
  for (const LinkInfo& l : links_)
    ++t.out_offsets_[l.source.value() + 1];
  for (std::size_t v = 0; v < n; ++v)
    t.out_offsets_[v + 1] += t.out_offsets_[v];
  t.links_.resize(m);
  {
    std::vector<std::uint32_t> next(t.out_offsets_.begin(), t.out_offsets_.end() - 1);
    for (const LinkInfo& l : links_)
      t.links_[next[l.source.value()]++] = l;
  }
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;
  edges.reserve(m);
  for (const LinkInfo& l : t.links_)
    edges.emplace_back(l.source.value(), l.target.value());
  t.graph_ = Graph(boost::edges_are_unsorted_multi_pass, edges.begin(), edges.end(),
                   static_cast<std::uint32_t>(n));
  for (std::uint32_t v = 0; v < n; ++v) {
    std::uint32_t expected = t.out_offsets_[v];
    for (auto [it, end] = boost::out_edges(v, t.graph_); it != end; ++it, ++expected) {
      if (boost::get(boost::edge_index, t.graph_, *it) != expected) {
        throw std::logic_error("Boost CSR graph numbered edges differently from the link order");
      }
    }
  }
  t.in_offsets_.assign(n + 1, 0);
  for (const LinkInfo& l : t.links_)
    ++t.in_offsets_[l.target.value() + 1];
  for (std::size_t v = 0; v < n; ++v)
    t.in_offsets_[v + 1] += t.in_offsets_[v];
  t.in_links_.resize(m);
  {
    std::vector<std::uint32_t> next(t.in_offsets_.begin(), t.in_offsets_.end() - 1);
    for (std::uint32_t i = 0; i < m; ++i) {
      t.in_links_[next[t.links_[i].target.value()]++] = LinkIndex(i);
    }
  }
}

void TopologyBuilder::index_accelerators(Topology& t) const {
  const std::size_t n = nodes_.size();
  t.accelerator_index_.assign(n, kNone);
  for (std::uint32_t v = 0; v < n; ++v) {
    if (nodes_[v].kind != NodeKind::kAccelerator) continue;
    t.accelerator_index_[v] = static_cast<std::uint32_t>(t.accelerators_.size());
    t.accelerators_.emplace_back(v);
  }
  if (t.accelerators_.empty()) {
    throw InputError(
        fmt::format("topology '{}' has no accelerators (nodes of kind 'accelerator')", name_));
  }
  // NIC attachments: a NIC linked in both directions to the accelerator.
  t.nic_offsets_.assign(t.accelerators_.size() + 1, 0);
  for (std::size_t a = 0; a < t.accelerators_.size(); ++a) {
    const std::uint32_t v = t.accelerators_[a].value();
    for (std::uint32_t i = t.out_offsets_[v]; i < t.out_offsets_[v + 1]; ++i) {
      const NodeId nic = t.links_[i].target;
      if (nodes_[nic.value()].kind != NodeKind::kNic) continue;
      for (std::uint32_t j = t.out_offsets_[nic.value()]; j < t.out_offsets_[nic.value() + 1];
           ++j) {
        if (t.links_[j].target.value() == v) {
          t.nic_attachments_.push_back(NicAttachment{nic, LinkIndex(i), LinkIndex(j)});
          break;
        }
      }
    }
    t.nic_offsets_[a + 1] = static_cast<std::uint32_t>(t.nic_attachments_.size());
  }
}

void TopologyBuilder::check_connected(const Topology& t) const {
  const std::size_t n = nodes_.size();
  const std::size_t m = links_.size();
  // Every accelerator must reach every other one, and be reached: checking against the first one
  // in both directions is enough (reachability through it is transitive only when the first one
  // forwards, so check from it as a source and as a sink).
  const std::vector<bool> none;
  const NodeId first = t.accelerators_.front();
  // Build the link order views the search uses: by source for forward, by target for backward.
  std::vector<LinkIndex> by_source(m);
  for (std::uint32_t i = 0; i < m; ++i)
    by_source[i] = LinkIndex(i);
  const auto fwd = reach(nodes_, t.out_offsets_, by_source, t.links_, first, false, none);
  const auto bwd = reach(nodes_, t.in_offsets_, t.in_links_, t.links_, first, true, none);
  for (NodeId a : t.accelerators_) {
    if (!fwd[a.value()] || !bwd[a.value()]) {
      throw InputError(fmt::format(
          "topology '{}': accelerator '{}' is disconnected from '{}' (no path {} it through "
          "nodes that forward traffic)",
          name_, nodes_[a.value()].name, nodes_[first.value()].name,
          fwd[a.value()] ? "back from" : "to"));
    }
  }
  // Within a scale-up domain, traffic stays in the domain (the router's policy): check that
  // each domain is connected on its own.
  for (std::uint32_t g = 0; g < groups_.size(); ++g) {
    if (groups_[g].kind != GroupKind::kScaleUp) continue;
    std::vector<bool> inside(n, false);
    NodeId root;
    for (NodeId member : groups_[g].members) {
      inside[member.value()] = true;
      if (!root.valid() && nodes_[member.value()].kind == NodeKind::kAccelerator) root = member;
    }
    if (!root.valid()) continue;
    const auto f = reach(nodes_, t.out_offsets_, by_source, t.links_, root, false, inside);
    const auto b = reach(nodes_, t.in_offsets_, t.in_links_, t.links_, root, true, inside);
    for (NodeId member : groups_[g].members) {
      if (nodes_[member.value()].kind != NodeKind::kAccelerator) continue;
      if (!f[member.value()] || !b[member.value()]) {
        throw InputError(fmt::format(
            "topology '{}': accelerator '{}' is disconnected from '{}' inside scale-up domain "
            "'{}' (traffic within a scale-up domain stays in it)",
            name_, nodes_[member.value()].name, nodes_[root.value()].name, groups_[g].name));
      }
    }
  }
}

Topology TopologyBuilder::build() && {
  Topology t;
  const std::size_t n = nodes_.size();
  const std::size_t m = links_.size();
  if (m >= LinkIndex::kInvalid || n >= NodeId::kInvalid) {
    throw InputError(fmt::format("topology '{}' is too large: {} nodes, {} links", name_, n, m));
  }
  index_links(t);
  index_accelerators(t);
  check_connected(t);

  t.name_ = std::move(name_);
  t.collective_library_ = collective_library_;
  t.nodes_ = std::move(nodes_);
  t.classes_ = std::move(classes_);
  t.by_name_ = std::move(by_name_);
  t.groups_ = std::move(groups_);
  for (std::size_t k = 0; k < group_of_.size(); ++k) {
    t.group_of_[k] = std::move(group_of_[k]);
    t.group_of_[k].resize(n, kNone);
  }
  if (!clos_.empty()) {
    clos_.resize(n);
    t.clos_ = std::move(clos_);
  }
  t.fabrics_ = std::move(fabrics_);
  return t;
}

}  // namespace stepsim::topology
