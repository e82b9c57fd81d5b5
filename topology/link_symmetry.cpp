#include "topology/link_symmetry.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <map>
#include <tuple>

namespace stepsim::topology {
namespace {

// One link of a node as its twins must have it too: direction, the node at the other end, class
// and line rate (bits of the double, so that only equal rates match).
using Attachment = std::tuple<bool, std::uint32_t, std::uint16_t, std::uint64_t>;

}  // namespace

std::vector<LinkIndex> symmetric_link_representatives(const Topology& topology, EcmpMode mode) {
  const std::size_t nodes = topology.num_nodes();
  const std::size_t links = topology.num_links();
  std::vector<LinkIndex> representative;
  representative.reserve(links);
  for (std::uint32_t l = 0; l < links; ++l)
    representative.emplace_back(l);
  if (mode == EcmpMode::kHash || mode == EcmpMode::kSpread) return representative;

  // Nodes whose every out-link sprays: where they split a route, they split it evenly.
  std::vector<std::uint8_t> sprays(nodes, 1);
  for (std::uint32_t v = 0; v < nodes; ++v) {
    const Topology::LinkRange range = topology.out_links(NodeId(v));
    for (std::uint32_t i = range.first; i < range.first + range.count; ++i) {
      if (!link_sprays(topology, LinkIndex(i), mode)) sprays[v] = 0;
    }
  }

  // Twin candidates grouped by their attachments.
  constexpr std::uint32_t kNone = 0xffffffffu;
  std::vector<std::uint32_t> group(nodes, kNone);
  std::map<std::vector<Attachment>, std::uint32_t> by_signature;
  std::vector<std::vector<std::uint32_t>> members;
  std::vector<Attachment> signature;
  for (std::uint32_t v = 0; v < nodes; ++v) {
    const NodeId node(v);
    const NodeInfo& info = topology.node(node);
    if (!info.forwards || info.kind == NodeKind::kAccelerator || info.kind == NodeKind::kNic)
      continue;
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
    const auto [it, added] =
        by_signature.emplace(signature, static_cast<std::uint32_t>(members.size()));
    if (added) members.emplace_back();
    members[it->second].push_back(v);
  }
  // A group of two or more twins counts when it and every node feeding it split evenly.
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
