// Assembles a Topology node by node and link by link, then checks it and freezes it.
//
// Builders (presets, the YAML reader) call add_node/add_link/add_group; build() renumbers links by
// source node (dense LinkIndex), builds the Boost.Graph, derives the NIC attachments and checks:
// every link has a positive bandwidth, every accelerator reaches every other one (through nodes
// that forward), and every scale-up domain is connected on its own. A failed check is an
// InputError naming the topology and the nodes concerned.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "topology/topology.hpp"

namespace stepsim::topology {

struct NodeOptions {
  bool in_network_reduction = false;
  std::optional<bool> forwards;  // default: every kind but accelerators forwards
  NodeId owner;                  // accelerator owning a die or a NIC
};

class TopologyBuilder {
 public:
  explicit TopologyBuilder(std::string name);

  // Adds a node. A name used twice is a bug in the caller (callers reading user input check
  // find() first and report the duplicate with its location): std::logic_error.
  NodeId add_node(std::string name, NodeKind kind, NodeOptions options = {});
  std::optional<NodeId> find(std::string_view name) const;
  std::size_t num_nodes() const { return nodes_.size(); }
  const NodeInfo& node(NodeId id) const { return nodes_[id.value()]; }
  void set_forwards(NodeId id, bool forwards) { nodes_[id.value()].forwards = forwards; }

  // The index of the link class `name`, created on first use with no efficiency set (line rate).
  std::uint16_t link_class(std::string_view name);
  void set_efficiency(std::uint16_t link_class, double efficiency);
  void set_multipath(std::uint16_t link_class, Multipath multipath) {
    classes_.at(link_class).multipath = multipath;
  }
  const std::vector<LinkClass>& link_classes() const { return classes_; }

  // Adds one directed link. A non-positive bandwidth is a bug here (readers check with location).
  void add_link(NodeId from, NodeId to, BytesPerSecond bandwidth, Time latency,
                std::uint16_t link_class);
  // Adds the two directions of a full-duplex link, each with `bandwidth`.
  void add_duplex(NodeId a, NodeId b, BytesPerSecond bandwidth, Time latency,
                  std::uint16_t link_class);
  std::size_t num_links() const { return links_.size(); }

  // Adds a group; a node may be in at most one group of each kind (std::logic_error otherwise).
  std::uint32_t add_group(GroupKind kind, std::string name, std::vector<NodeId> members);
  // Returns the group of `kind` that `node` is in, if any.
  std::optional<std::uint32_t> group_of(NodeId node, GroupKind kind) const;

  // The collective library of the fabric (Topology::collective_library); NCCL unless set.
  void set_collective_library(CollectiveLibrary library) { collective_library_ = library; }

  void set_clos_label(NodeId node, ClosLabel label);
  void add_fabric(FabricSummary summary) { fabrics_.push_back(std::move(summary)); }

  // Checks and freezes the topology. Throws InputError when a check fails.
  Topology build() &&;

 private:
  // The steps of build(), in order. Numbers the links by source (the compressed-sparse-row edge
  // order), builds the Boost graph and the links by target.
  void index_links(Topology& t) const;
  // Lists the accelerators and their NIC attachments; InputError when there is no accelerator.
  void index_accelerators(Topology& t) const;
  // InputError when an accelerator does not reach, or is not reached by, the first one, or
  // another accelerator of its scale-up domain without leaving the domain.
  void check_connected(const Topology& t) const;

  std::string name_;
  CollectiveLibrary collective_library_ = CollectiveLibrary::kNccl;
  std::vector<NodeInfo> nodes_;
  std::vector<LinkInfo> links_;
  std::vector<LinkClass> classes_;
  std::unordered_map<std::string, NodeId> by_name_;  // lookup only, never iterated
  std::vector<Group> groups_;
  std::array<std::vector<std::uint32_t>, kAllGroupKinds.size()> group_of_;
  std::vector<ClosLabel> clos_;
  std::vector<FabricSummary> fabrics_;
};

}  // namespace stepsim::topology
