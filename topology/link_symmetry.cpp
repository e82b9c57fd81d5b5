#include "topology/link_symmetry.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

namespace stepsim::topology {
namespace {

// One link of a node as its twins must have it too: direction, the node at the other end, class
// and line rate (bits of the double, so that only equal rates match).
using Attachment = std::tuple<bool, std::uint32_t, std::uint16_t, std::uint64_t>;

constexpr std::uint32_t kNone = 0xffffffffu;

// Nodes whose every out-link sprays: where they split a route, they split it evenly.
std::vector<std::uint8_t> spraying_nodes(const Topology& topology, EcmpMode mode) {
  const std::size_t nodes = topology.num_nodes();
  std::vector<std::uint8_t> sprays(nodes, 1);
  for (std::uint32_t v = 0; v < nodes; ++v) {
    const Topology::LinkRange range = topology.out_links(NodeId(v));
    for (std::uint32_t i = range.first; i < range.first + range.count; ++i) {
      if (!link_sprays(topology, LinkIndex(i), mode)) sprays[v] = 0;
    }
  }
  return sprays;
}

// A forwarding node's signature in `signature`: what a twin must share with it.
void twin_signature(const Topology& topology, NodeId node, std::vector<Attachment>& signature) {
  const NodeInfo& info = topology.node(node);
  signature.clear();
  // Kind, scale-up group and Clos label first, as one attachment each of their own shape.
  const auto scale_up = topology.group_of(node, GroupKind::kScaleUp);
  signature.emplace_back(false, static_cast<std::uint32_t>(info.kind), 0xffff,
                         scale_up ? *scale_up + 1 : 0);
  if (topology.has_clos()) {
    const ClosLabel& label = topology.clos(node);
    signature.emplace_back(
        false, static_cast<std::uint32_t>(label.tier + 1), 0xfffe,
        (static_cast<std::uint64_t>(label.lo) << 32) | static_cast<std::uint64_t>(label.hi));
  }
  const Topology::LinkRange range = topology.out_links(node);
  for (std::uint32_t i = range.first; i < range.first + range.count; ++i) {
    const LinkIndex l(i);
    signature.emplace_back(true, topology.target(l).value(), topology.link(l).link_class,
                           std::bit_cast<std::uint64_t>(topology.bandwidth(l).value()));
  }
  for (const LinkIndex l : topology.in_links(node)) {
    signature.emplace_back(false, topology.source(l).value(), topology.link(l).link_class,
                           std::bit_cast<std::uint64_t>(topology.bandwidth(l).value()));
  }
  std::sort(signature.begin() + 1 + (topology.has_clos() ? 1 : 0), signature.end());
}

// Each node's twin group (kNone for none): twin candidates grouped by their attachments, where a
// group of two or more counts when it and every node feeding it split evenly.
std::vector<std::uint32_t> twin_groups(const Topology& topology,
                                       const std::vector<std::uint8_t>& sprays) {
  const std::size_t nodes = topology.num_nodes();
  std::vector<std::uint32_t> group(nodes, kNone);
  std::map<std::vector<Attachment>, std::uint32_t> by_signature;
  std::vector<std::vector<std::uint32_t>> members;
  std::vector<Attachment> signature;
  for (std::uint32_t v = 0; v < nodes; ++v) {
    const NodeInfo& info = topology.node(NodeId(v));
    if (!info.forwards || info.kind == NodeKind::kAccelerator || info.kind == NodeKind::kNic)
      continue;
    twin_signature(topology, NodeId(v), signature);
    const auto [it, added] =
        by_signature.emplace(signature, static_cast<std::uint32_t>(members.size()));
    if (added) members.emplace_back();
    members[it->second].push_back(v);
  }
  for (std::uint32_t g = 0; g < members.size(); ++g) {
    if (members[g].size() < 2) continue;
    bool even = true;
    for (const std::uint32_t v : members[g]) {
      if (sprays[v] == 0) even = false;
      for (const LinkIndex l : topology.in_links(NodeId(v)))
        if (sprays[topology.source(l).value()] == 0) even = false;
    }
    if (!even) continue;
    for (const std::uint32_t v : members[g])
      group[v] = g;
  }
  return group;
}

}  // namespace

std::vector<LinkIndex> symmetric_link_representatives(const Topology& topology, EcmpMode mode) {
  const std::size_t links = topology.num_links();
  std::vector<LinkIndex> representative;
  representative.reserve(links);
  for (std::uint32_t l = 0; l < links; ++l)
    representative.emplace_back(l);
  if (mode == EcmpMode::kHash || mode == EcmpMode::kSpread) return representative;

  const std::vector<std::uint8_t> sprays = spraying_nodes(topology, mode);
  const std::vector<std::uint32_t> group = twin_groups(topology, sprays);

  // Links with the same key are equivalent: ends (a twin group stands for each of its members),
  // class and line rate. A link with no twin end and a source that may hash keeps a key of its
  // own (its index), since the parallel links beside it may carry another share.
  using Key = std::tuple<std::uint64_t, std::uint64_t, std::uint16_t, std::uint64_t>;
  const auto end_key = [&](NodeId v) -> std::uint64_t {
    return group[v.value()] == kNone ? v.value() : (std::uint64_t{1} << 32) | group[v.value()];
  };
  std::map<Key, std::uint32_t> first_of;
  for (std::uint32_t i = 0; i < links; ++i) {
    const LinkIndex l(i);
    const NodeId from = topology.source(l), to = topology.target(l);
    const bool twin_end = group[from.value()] != kNone || group[to.value()] != kNone;
    if (!twin_end && sprays[from.value()] == 0) continue;
    const Key key{end_key(from), end_key(to), topology.link(l).link_class,
                  std::bit_cast<std::uint64_t>(topology.bandwidth(l).value())};
    const auto [it, added] = first_of.emplace(key, i);
    representative[i] = LinkIndex(it->second);
  }
  return representative;
}

}  // namespace stepsim::topology
