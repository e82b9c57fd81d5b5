// Huawei CloudMatrix384 (Zuo et al., "Serving Large Language Models on Huawei CloudMatrix384",
// arXiv 2506.12708, section 3): a UB (Unified Bus) supernode of 48 nodes x 8 Ascend 910C NPUs,
// and the RDMA plane that joins supernodes.
//
// Model, per the paper:
//  - each Ascend 910C package (the accelerator, one rank) has two dies, joined by an on-package
//    die-to-die link; each die has 7 UB links of 28 GB/s per direction, one to each of the node's
//    7 L1 UB switch chips: 2 x 7 x 28 = 392 GB/s one-way UB bandwidth per NPU;
//  - each L1 chip has 16 links down (8 NPUs x 2 dies) and 16 links up, one to each of the 16 L2
//    chips of its sub-plane: 7 sub-planes x 16 = 112 L2 chips, each with one link to the matching
//    L1 chip of every node (48 ports) - a non-blocking two-tier Clos (down = up = 448 GB/s per L1);
//  - the RDMA plane gives each NPU 400 Gb/s; here a rail-optimized fat-tree (radix and tiers are
//    parameters: the paper does not give the switch layout).
// Not modeled: the 192 Kunpeng CPUs and the VPC plane (storage and control traffic).
// The package vertex stands for the NPU's compute; its links to its own dies carry the HBM share
// of each die (3.2 TB/s per package / 2, paper Table 1), so they never limit UB traffic.
#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <vector>

#include "topology/builder_registry.hpp"
#include "topology/fat_tree.hpp"

namespace stepsim::topology {
namespace {

constexpr int kNodes = 48;
constexpr int kNpusPerNode = 8;
constexpr int kDies = 2;
constexpr int kL1PerNode = 7;  // = sub-planes
constexpr int kL2PerPlane = 16;
constexpr int kNodesPerRack = 4;  // 12 compute racks of 4 nodes

// The UB supernode's link rates, latencies and classes, as every part of it is built with them.
struct UbLinks {
  BytesPerSecond ub;
  Time ub_latency;
  BytesPerSecond d2d;
  Time d2d_latency;
  BytesPerSecond package;
  BytesPerSecond rdma;
  std::uint16_t ub_class = 0;
  std::uint16_t d2d_class = 0;
  std::uint16_t package_class = 0;
  std::uint16_t port_class = 0;
};

std::vector<ParamSpec> cloudmatrix_params() {
  std::vector<ParamSpec> params = {
      {"supernodes", "1", "CloudMatrix384 supernodes joined by the RDMA plane"},
      {"ub_link_bandwidth", "28GB/s", "one UB link, per direction (paper: 7 per die)"},
      {"ub_latency", "200ns", "per UB link, switch traversal included (assumption)"},
      {"die_to_die_bandwidth", "540GB/s",
       "on-package link between the two dies of an NPU, per direction (assumption)"},
      {"die_to_die_latency", "100ns", "on-package latency (assumption)"},
      {"package_bandwidth", "1.6TB/s", "NPU compute to each of its dies (half of 3.2 TB/s HBM)"},
  };
  for (ParamSpec& s : fat_tree_param_specs("auto", "64", "400Gbps", "true", "130ns", "false")) {
    s.name = s.name == "nic_speed" ? "rdma_speed" : "rdma_" + s.name;
    s.help = "RDMA plane: " + s.help;
    params.push_back(s);
  }
  return params;
}

// The RDMA plane: a fat-tree over every NPU's NIC of `rdma` per link, from the rdma_* parameters.
FatTreeSpec rdma_plane_spec(const ParamReader& p, BytesPerSecond rdma) {
  FatTreeSpec spec;
  const config::Node tiers = p.at("rdma_tiers");
  spec.tiers =
      tiers.is_scalar() && tiers.as_string() == "auto" ? 0 : static_cast<int>(tiers.as_int(2, 3));
  spec.radix = static_cast<int>(p.integer("rdma_radix", 2, 4096));
  spec.link_bandwidth = rdma;
  spec.link_latency = p.time("rdma_switch_latency");
  spec.rail_optimized = p.boolean("rdma_rail_optimized");
  spec.in_network_reduction = p.boolean("rdma_sharp");
  spec.leaf_oversubscription = p.number("rdma_oversubscription", 1, 1024);
  spec.link_class = "roce";
  spec.prefix = "rdma.";
  spec.name = "rdma";
  return spec;
}

// One NPU: its package vertex, two dies (each linked to the package, to every L1 chip of its
// node and to the other die) and its RDMA NIC. Appends the package and dies to `members` and the
// NIC to `nics`.
void add_npu(TopologyBuilder& b, const UbLinks& links, const std::string& npu_name,
             const std::vector<NodeId>& l1, std::vector<NodeId>& members,
             std::vector<NodeId>& nics) {
  const NodeId npu = b.add_node(npu_name, NodeKind::kAccelerator);
  members.push_back(npu);
  NodeId die[kDies];
  for (int d = 0; d < kDies; ++d) {
    die[d] = b.add_node(fmt::format("{}.die{}", npu_name, d), NodeKind::kDie,
                        NodeOptions{false, std::nullopt, npu});
    members.push_back(die[d]);
    b.add_duplex(npu, die[d], links.package, Time::zero(), links.package_class);
    for (int k = 0; k < kL1PerNode; ++k) {
      b.add_duplex(die[d], l1[static_cast<std::size_t>(k)], links.ub, links.ub_latency,
                   links.ub_class);
    }
  }
  b.add_duplex(die[0], die[1], links.d2d, links.d2d_latency, links.d2d_class);
  const NodeId nic =
      b.add_node(npu_name + ".nic", NodeKind::kNic, NodeOptions{false, std::nullopt, npu});
  b.add_duplex(npu, nic, links.rdma, Time::zero(), links.port_class);
  nics.push_back(nic);
}

// What one supernode's parts hand to the next: the scale-up domain's members, each node's L1
// chips and members (for the planes and racks), and each node's NICs (the RDMA plane's hosts).
struct Supernode {
  std::vector<NodeId> domain;
  std::vector<std::vector<NodeId>> l1 = std::vector<std::vector<NodeId>>(kNodes);
  std::vector<std::vector<NodeId>> node_members = std::vector<std::vector<NodeId>>(kNodes);
};

// Node `n` of a supernode: its 7 L1 UB chips and 8 NPUs, grouped as one node.
void add_node(TopologyBuilder& b, const UbLinks& links, const std::string& sn, int n,
              Supernode& supernode, std::vector<std::vector<NodeId>>& hosts) {
  const std::string node = fmt::format("{}node{}", sn, n);
  const auto at = static_cast<std::size_t>(n);
  std::vector<NodeId> members;
  for (int k = 0; k < kL1PerNode; ++k) {
    supernode.l1[at].push_back(b.add_node(fmt::format("{}.l1.{}", node, k), NodeKind::kSwitch));
    members.push_back(supernode.l1[at].back());
  }
  std::vector<NodeId> nics;
  for (int i = 0; i < kNpusPerNode; ++i)
    add_npu(b, links, fmt::format("{}.npu{}", node, i), supernode.l1[at], members, nics);
  supernode.domain.insert(supernode.domain.end(), members.begin(), members.end());
  for (NodeId nic : nics)
    members.push_back(nic);
  supernode.node_members[at] = members;
  b.add_group(GroupKind::kNode, node, std::move(members));
  hosts.push_back(std::move(nics));
}

// The 7 planes of 16 L2 chips, each L2 chip linked to the matching L1 chip of every node.
void add_planes(TopologyBuilder& b, const UbLinks& links, const std::string& sn,
                Supernode& supernode) {
  for (int k = 0; k < kL1PerNode; ++k) {
    const auto plane_index = static_cast<std::size_t>(k);
    std::vector<NodeId> plane;
    for (int j = 0; j < kL2PerPlane; ++j) {
      const NodeId l2 = b.add_node(fmt::format("{}l2.plane{}.{}", sn, k, j), NodeKind::kSwitch);
      plane.push_back(l2);
      supernode.domain.push_back(l2);
      for (int n = 0; n < kNodes; ++n) {
        b.add_duplex(supernode.l1[static_cast<std::size_t>(n)][plane_index], l2, links.ub,
                     links.ub_latency, links.ub_class);
      }
    }
    for (int n = 0; n < kNodes; ++n)
      plane.push_back(supernode.l1[static_cast<std::size_t>(n)][plane_index]);
    b.add_group(GroupKind::kPlane, fmt::format("{}plane{}", sn, k), std::move(plane));
  }
}

void add_racks(TopologyBuilder& b, const std::string& sn, const Supernode& supernode) {
  for (int r = 0; r < kNodes / kNodesPerRack; ++r) {
    std::vector<NodeId> rack;
    for (int n = r * kNodesPerRack; n < (r + 1) * kNodesPerRack; ++n) {
      const auto& m = supernode.node_members[static_cast<std::size_t>(n)];
      rack.insert(rack.end(), m.begin(), m.end());
    }
    b.add_group(GroupKind::kRack, fmt::format("{}rack{}", sn, r), std::move(rack));
  }
}

// Supernode `s` of `supernodes`: nodes, planes, racks, and the scale-up group over all of it.
void add_supernode(TopologyBuilder& b, const UbLinks& links, int s, int supernodes,
                   std::vector<std::vector<NodeId>>& hosts) {
  const std::string sn = supernodes == 1 ? "" : fmt::format("sn{}.", s);
  Supernode supernode;
  for (int n = 0; n < kNodes; ++n)
    add_node(b, links, sn, n, supernode, hosts);
  add_planes(b, links, sn, supernode);
  add_racks(b, sn, supernode);
  b.add_group(GroupKind::kScaleUp, supernodes == 1 ? "supernode" : fmt::format("sn{}", s),
              std::move(supernode.domain));
}

Topology build_cloudmatrix(const ParamReader& p) {
  const int supernodes = static_cast<int>(p.integer("supernodes", 1, 1024));
  UbLinks links;
  links.ub = p.bandwidth("ub_link_bandwidth");
  links.ub_latency = p.time("ub_latency");
  links.d2d = p.bandwidth("die_to_die_bandwidth");
  links.d2d_latency = p.time("die_to_die_latency");
  links.package = p.bandwidth("package_bandwidth");
  links.rdma = p.bandwidth("rdma_speed");
  const FatTreeSpec spec = rdma_plane_spec(p, links.rdma);
  // Checked before anything is built.
  check_fat_tree(spec, static_cast<std::size_t>(supernodes) * kNodes, kNpusPerNode, p);
  TopologyBuilder b("cloudmatrix384");
  b.set_collective_library(CollectiveLibrary::kHccl);  // Ascend NPUs run HCCL, not NCCL
  links.ub_class = b.link_class("ub");
  links.d2d_class = b.link_class("die-to-die");
  links.package_class = b.link_class("on-package");
  links.port_class = b.link_class("rdma-port");
  // UB moves one transfer over every UB port of the NPU at once (multi-port load/store and
  // DMA: the paper's section 3 gives each die 7 UB links, one per plane, and the NPU's
  // 392 GB/s is their sum), and the L1 chips spread it over the L2 chips of their plane.
  // The RDMA plane (RoCE) hashes per flow, as Ethernet ECMP does.
  for (const auto cls : {links.ub_class, links.d2d_class, links.package_class})
    b.set_multipath(cls, Multipath::kSpray);
  std::vector<std::vector<NodeId>> hosts;
  for (int s = 0; s < supernodes; ++s)
    add_supernode(b, links, s, supernodes, hosts);
  add_fat_tree(b, spec, hosts, p);
  return std::move(b).build();
}

}  // namespace

void register_cloudmatrix_presets(BuilderRegistry& registry) {
  registry.add(BuilderEntry{
      "cloudmatrix384", BuilderEntry::Category::kPreset,
      "Huawei CloudMatrix384: 384 Ascend 910C (768 dies), UB Clos of 336 L1 + 112 L2 chips, 392 "
      "GB/s per NPU; RDMA plane 400G per NPU",
      cloudmatrix_params(), build_cloudmatrix});
}

}  // namespace stepsim::topology
