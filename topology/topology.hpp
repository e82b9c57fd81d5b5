// A cluster's network as a directed graph: vertices are accelerators (GPU/NPU packages), their
// dies, CPUs, NICs and switches; edges are directed links with a bandwidth (bytes per second, per
// direction, the line rate) and a latency (the time a byte needs to cross the link and enter the
// next device). A full-duplex cable is two links.
//
// Identifiers are dense: NodeId 0..num_nodes()-1 and LinkIndex 0..num_links()-1, so the flow
// network can keep per-link state in plain arrays. Links are numbered by source node (all links
// leaving node 0 first), which is the edge order of the Boost.Graph compressed-sparse-row graph
// that stores the structure: `graph()` is usable with every Boost.Graph algorithm, and the
// edge_index of an edge is its LinkIndex.
//
// Nodes keep their groups (node, rack, pod, plane, scale-up domain; at most one of each kind), so
// workloads can place ranks and reports can name a link "node12.gpu3 -> leaf5". Rank r runs on
// accelerators()[r].
//
// A Topology is immutable; build it with TopologyBuilder, load it with load_topology().
#pragma once

#include <array>
#include <boost/graph/compressed_sparse_row_graph.hpp>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "sim/common/units.hpp"
#include "topology/ids.hpp"
#include "topology/node_kind.hpp"

namespace stepsim::topology {

// The Boost.Graph that stores the structure: vertex i is NodeId(i), edge index j is LinkIndex(j).
using Graph = boost::compressed_sparse_row_graph<boost::bidirectionalS, boost::no_property,
                                                 boost::no_property, boost::no_property,
                                                 std::uint32_t, std::uint32_t>;

enum class GroupKind : std::uint8_t { kNode, kRack, kPod, kPlane, kScaleUp };
inline constexpr std::array<GroupKind, 5> kAllGroupKinds = {
    GroupKind::kNode, GroupKind::kRack, GroupKind::kPod, GroupKind::kPlane, GroupKind::kScaleUp};
// "node", "rack", "pod", "plane", "scale-up".
std::string_view to_string(GroupKind kind);
std::optional<GroupKind> parse_group_kind(std::string_view text);

struct NodeInfo {
  std::string name;  // unique, e.g. "node12.gpu3", "leaf5"
  NodeKind kind = NodeKind::kSwitch;
  // The switch can reduce data in the network (NVSwitch NVLS, InfiniBand SHARP).
  bool in_network_reduction = false;
  // The node may carry traffic between two other nodes. Switches, NICs, dies and CPUs do by
  // default; accelerators only in direct networks (torus, full mesh).
  bool forwards = true;
  // The accelerator a die or a dedicated NIC belongs to; invalid otherwise.
  NodeId owner;
};

// How a technology moves one transfer across parallel equal-cost links (a property of the
// hardware, set by the fabric's preset with its source; docs/topology.md, "Routing"):
//  - hash: the whole transfer takes one of them, chosen by a hash of the transfer, at every hop
//    (InfiniBand and RoCE static routing, Ethernet ECMP);
//  - spray: the transfer is spread evenly over all of them, packet by packet, at every hop (NVLink
//    striping over NVSwitch chips, UB's multi-port load/store and DMA over the planes).
enum class Multipath : std::uint8_t { kHash, kSpray };
// "hash", "spray".
std::string_view to_string(Multipath multipath);
std::optional<Multipath> parse_multipath(std::string_view text);

// The collective library that runs on a fabric's accelerators. Under NCCL (NVIDIA GPUs) the
// collectives take NCCL's protocols and its tuner's choice (sim/collectives/nccl/nccl_tuner.hpp);
// under HCCL (Huawei Ascend: CloudMatrix384, UB-Mesh) they keep stepsim's own algorithm rules and
// latencies, since NCCL's constants and its LL/LL128 protocols are not HCCL's.
enum class CollectiveLibrary : std::uint8_t { kNccl, kHccl };
// "nccl", "hccl".
std::string_view to_string(CollectiveLibrary library);
std::optional<CollectiveLibrary> parse_collective_library(std::string_view text);

// A family of links with the same technology ("nvlink", "ib", "pcie", "ub"...). The efficiency
// (0..1] turns line rate into the effective bandwidth a flow can reach (protocol overheads). Unset
// unless the user sets it: the links run at line rate here, and the collectives may calibrate them
// (a set efficiency, 1.0 included, is kept as given).
struct LinkClass {
  std::string name;
  std::optional<double> efficiency;
  Multipath multipath = Multipath::kHash;
};

struct LinkInfo {
  NodeId source;
  NodeId target;
  BytesPerSecond bandwidth;  // line rate, one direction
  Time latency;
  std::uint16_t link_class = 0;  // index into link_classes()
};

struct Group {
  GroupKind kind = GroupKind::kNode;
  std::string name;
  std::vector<NodeId> members;
};

// Structure of a folded-Clos (fat-tree) fabric, for routing without search. Every fabric port (a
// NIC, or an accelerator attached directly) has a position; every fabric node covers the interval
// [lo, hi) of positions reachable from it by going only down. Tier 0 is a port, 1 a leaf, 2 a spine
// (aggregation), 3 a core switch. The builder guarantees that all up-neighbours of a node cover the
// same interval, so any up-link is on a shortest path (up-down routing), and that every
// up-neighbour has as many shortest paths down to any port as the others (symmetry), so path counts
// are products of up-degrees.
struct ClosLabel {
  std::int32_t tier = -1;  // -1: the node is not part of a Clos fabric
  std::uint32_t lo = 0;
  std::uint32_t hi = 0;
  bool covers(std::uint32_t position) const { return lo <= position && position < hi; }
};

// One switch tier of a fat-tree, as the analysis reports it.
struct FabricTier {
  std::string name;  // "leaf", "spine", "core"
  std::size_t switches = 0;
  std::size_t down_links = 0;  // in use, summed over the tier
  std::size_t up_links = 0;    // summed over the tier (0 at the top)
  BytesPerSecond link_bandwidth;
  // down capacity / up capacity of the tier (1 = non-blocking); 0 at the top tier.
  double oversubscription = 0;
};

// What a fabric builder knows about the fabric it made, for `stepsim topo`.
struct FabricSummary {
  std::string name;  // "scale-out", "rdma"
  std::vector<FabricTier> tiers;
  std::size_t ports = 0;  // fabric ports (NICs)
  BytesPerSecond port_bandwidth;
  BytesPerSecond bisection;  // closed form from the structure
  std::string bisection_method;
};

// An accelerator's attachment to a NIC: the NIC and the two links between them.
struct NicAttachment {
  NodeId nic;
  LinkIndex to_nic;
  LinkIndex from_nic;
};

class Topology {
 public:
  Topology() = default;

  const std::string& name() const { return name_; }
  // Renames the topology (a `name:` beside `preset:` or `builder:`); nodes keep their names.
  void set_name(std::string name) { name_ = std::move(name); }
  std::size_t num_nodes() const { return nodes_.size(); }
  std::size_t num_links() const { return links_.size(); }
  const Graph& graph() const { return graph_; }

  const NodeInfo& node(NodeId id) const { return nodes_[id.value()]; }
  const std::string& name(NodeId id) const { return nodes_[id.value()].name; }
  NodeKind kind(NodeId id) const { return nodes_[id.value()].kind; }
  std::optional<NodeId> find_node(std::string_view name) const;
  std::size_t count(NodeKind kind) const;

  const LinkInfo& link(LinkIndex id) const { return links_[id.value()]; }
  NodeId source(LinkIndex id) const { return links_[id.value()].source; }
  NodeId target(LinkIndex id) const { return links_[id.value()].target; }
  BytesPerSecond bandwidth(LinkIndex id) const { return links_[id.value()].bandwidth; }
  // Line rate times the link class's efficiency.
  BytesPerSecond effective_bandwidth(LinkIndex id) const;
  Time latency(LinkIndex id) const { return links_[id.value()].latency; }
  const LinkClass& link_class(LinkIndex id) const {
    return classes_[links_[id.value()].link_class];
  }
  const std::vector<LinkClass>& link_classes() const { return classes_; }
  // Sets the efficiency (0, 1] of a link class; false when there is no class of that name. Part of
  // loading (load_topology applies `efficiency:`), not meant to change while routes are in use.
  bool set_efficiency(std::string_view link_class, double efficiency);
  // Sets how a link class spreads transfers over parallel links (as set_efficiency: part of
  // loading, `multipath:` in a topology map); false when there is no class of that name.
  bool set_multipath(std::string_view link_class, Multipath multipath);
  // The collective library of the fabric (`collective_library:` in a topology map or graph file;
  // the presets set theirs). NCCL unless set.
  CollectiveLibrary collective_library() const { return collective_library_; }
  void set_collective_library(CollectiveLibrary library) { collective_library_ = library; }
  // "node12.gpu3 -> leaf5"
  std::string describe(LinkIndex id) const;

  // Links leaving `node`: LinkIndex first, first+1, ..., first+count-1.
  struct LinkRange {
    std::uint32_t first = 0;
    std::uint32_t count = 0;
  };
  LinkRange out_links(NodeId node) const {
    return {out_offsets_[node.value()],
            out_offsets_[node.value() + 1] - out_offsets_[node.value()]};
  }
  // Links entering `node`.
  std::span<const LinkIndex> in_links(NodeId node) const {
    return {in_links_.data() + in_offsets_[node.value()],
            in_links_.data() + in_offsets_[node.value() + 1]};
  }

  // Accelerators in topology order: rank r runs on accelerators()[r].
  const std::vector<NodeId>& accelerators() const { return accelerators_; }
  // The rank index of an accelerator; nullopt for other nodes.
  std::optional<std::uint32_t> accelerator_index(NodeId node) const;
  // NICs linked directly to an accelerator, in link order.
  std::span<const NicAttachment> nics(NodeId accelerator) const;

  const std::vector<Group>& groups() const { return groups_; }
  const Group& group(std::uint32_t index) const { return groups_[index]; }
  // The group of `kind` that `node` belongs to, as an index into groups().
  std::optional<std::uint32_t> group_of(NodeId node, GroupKind kind) const;

  bool has_clos() const { return !clos_.empty(); }
  const ClosLabel& clos(NodeId node) const { return clos_[node.value()]; }
  const std::vector<FabricSummary>& fabrics() const { return fabrics_; }

 private:
  friend class TopologyBuilder;
  LinkClass* find_class(std::string_view link_class);  // nullptr when there is none
  std::string name_;
  CollectiveLibrary collective_library_ = CollectiveLibrary::kNccl;
  std::vector<NodeInfo> nodes_;
  std::vector<LinkInfo> links_;
  std::vector<LinkClass> classes_;
  Graph graph_;
  std::vector<std::uint32_t> out_offsets_;  // num_nodes + 1
  std::vector<std::uint32_t> in_offsets_;   // num_nodes + 1
  std::vector<LinkIndex> in_links_;
  std::unordered_map<std::string, NodeId> by_name_;  // lookup only, never iterated
  std::vector<NodeId> accelerators_;
  std::vector<std::uint32_t> accelerator_index_;  // per node; kInvalid for non-accelerators
  std::vector<std::uint32_t> nic_offsets_;        // per accelerator index + 1
  std::vector<NicAttachment> nic_attachments_;
  std::vector<Group> groups_;
  std::array<std::vector<std::uint32_t>, kAllGroupKinds.size()> group_of_;  // per kind, per node
  std::vector<ClosLabel> clos_;  // empty when no Clos fabric
  std::vector<FabricSummary> fabrics_;
};

}  // namespace stepsim::topology
