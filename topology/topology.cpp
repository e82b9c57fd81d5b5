#include "topology/topology.hpp"

#include <fmt/format.h>
#include <algorithm>

namespace stepsim::topology {

std::string_view to_string(GroupKind kind) {
  switch (kind) {
    case GroupKind::kNode:
      return "node";
    case GroupKind::kRack:
      return "rack";
    case GroupKind::kPod:
      return "pod";
    case GroupKind::kPlane:
      return "plane";
    case GroupKind::kScaleUp:
      return "scale-up";
  }
  return "unknown";
}

std::optional<GroupKind> parse_group_kind(std::string_view text) {
  for (GroupKind kind : kAllGroupKinds) {
    if (to_string(kind) == text) return kind;
  }
  return std::nullopt;
}

std::string_view to_string(Multipath multipath) {
  return multipath == Multipath::kSpray ? "spray" : "hash";
}

std::optional<Multipath> parse_multipath(std::string_view text) {
  if (text == "hash") return Multipath::kHash;
  if (text == "spray") return Multipath::kSpray;
  return std::nullopt;
}

std::string_view to_string(CollectiveLibrary library) {
  return library == CollectiveLibrary::kHccl ? "hccl" : "nccl";
}

std::optional<CollectiveLibrary> parse_collective_library(std::string_view text) {
  if (text == "nccl") return CollectiveLibrary::kNccl;
  if (text == "hccl") return CollectiveLibrary::kHccl;
  return std::nullopt;
}

std::optional<NodeId> Topology::find_node(std::string_view name) const {
  const auto it = by_name_.find(std::string(name));
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

std::size_t Topology::count(NodeKind kind) const {
  return static_cast<std::size_t>(std::count_if(
      nodes_.begin(), nodes_.end(), [kind](const NodeInfo& n) { return n.kind == kind; }));
}

BytesPerSecond Topology::effective_bandwidth(LinkIndex id) const {
  const LinkInfo& l = links_[id.value()];
  return l.bandwidth * classes_[l.link_class].efficiency.value_or(1.0);
}

LinkClass* Topology::find_class(std::string_view link_class) {
  for (LinkClass& c : classes_)
    if (c.name == link_class) return &c;
  return nullptr;
}

bool Topology::set_efficiency(std::string_view link_class, double efficiency) {
  LinkClass* c = find_class(link_class);
  if (c != nullptr) c->efficiency = efficiency;
  return c != nullptr;
}

bool Topology::set_multipath(std::string_view link_class, Multipath multipath) {
  LinkClass* c = find_class(link_class);
  if (c != nullptr) c->multipath = multipath;
  return c != nullptr;
}

std::string Topology::describe(LinkIndex id) const {
  const LinkInfo& l = links_[id.value()];
  return fmt::format("{} -> {}", nodes_[l.source.value()].name, nodes_[l.target.value()].name);
}

std::optional<std::uint32_t> Topology::accelerator_index(NodeId node) const {
  const std::uint32_t i = accelerator_index_[node.value()];
  if (i == NodeId::kInvalid) return std::nullopt;
  return i;
}

std::span<const NicAttachment> Topology::nics(NodeId accelerator) const {
  const std::uint32_t i = accelerator_index_[accelerator.value()];
  if (i == NodeId::kInvalid) return {};
  return {nic_attachments_.data() + nic_offsets_[i], nic_attachments_.data() + nic_offsets_[i + 1]};
}

std::optional<std::uint32_t> Topology::group_of(NodeId node, GroupKind kind) const {
  const std::uint32_t g = group_of_[static_cast<std::size_t>(kind)][node.value()];
  if (g == NodeId::kInvalid) return std::nullopt;
  return g;
}

}  // namespace stepsim::topology
