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

#include "topology/builder_registry.hpp"
#include "topology/fat_tree.hpp"

namespace stepsim::topology {

void register_cloudmatrix_presets(BuilderRegistry& registry) {
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
  registry.add(BuilderEntry{
      "cloudmatrix384", BuilderEntry::Category::kPreset,
      "Huawei CloudMatrix384: 384 Ascend 910C (768 dies), UB Clos of 336 L1 + 112 L2 chips, 392 "
      "GB/s per NPU; RDMA plane 400G per NPU",
      params, [](const ParamReader& p) {
        constexpr int kNodes = 48;
        constexpr int kNpusPerNode = 8;
        constexpr int kDies = 2;
        constexpr int kL1PerNode = 7;  // = sub-planes
        constexpr int kL2PerPlane = 16;
        constexpr int kNodesPerRack = 4;  // 12 compute racks of 4 nodes
        const int supernodes = static_cast<int>(p.integer("supernodes", 1, 1024));
        const BytesPerSecond ub = p.bandwidth("ub_link_bandwidth");
        const Time ub_latency = p.time("ub_latency");
        const BytesPerSecond d2d = p.bandwidth("die_to_die_bandwidth");
        const Time d2d_latency = p.time("die_to_die_latency");
        const BytesPerSecond package = p.bandwidth("package_bandwidth");
        const BytesPerSecond rdma = p.bandwidth("rdma_speed");

        // The RDMA plane: a fat-tree over every NPU's NIC, checked before anything is built.
        FatTreeSpec spec;
        const config::Node tiers = p.at("rdma_tiers");
        spec.tiers = tiers.is_scalar() && tiers.as_string() == "auto"
                         ? 0
                         : static_cast<int>(tiers.as_int(2, 3));
        spec.radix = static_cast<int>(p.integer("rdma_radix", 2, 4096));
        spec.link_bandwidth = rdma;
        spec.link_latency = p.time("rdma_switch_latency");
        spec.rail_optimized = p.boolean("rdma_rail_optimized");
        spec.in_network_reduction = p.boolean("rdma_sharp");
        spec.leaf_oversubscription = p.number("rdma_oversubscription", 1, 1024);
        spec.link_class = "roce";
        spec.prefix = "rdma.";
        spec.name = "rdma";
        check_fat_tree(spec, static_cast<std::size_t>(supernodes) * kNodes, kNpusPerNode, p);
        TopologyBuilder b("cloudmatrix384");
        b.set_collective_library(CollectiveLibrary::kHccl);  // Ascend NPUs run HCCL, not NCCL
        const auto ub_class = b.link_class("ub");
        const auto d2d_class = b.link_class("die-to-die");
        const auto package_class = b.link_class("on-package");
        const auto port_class = b.link_class("rdma-port");
        // UB moves one transfer over every UB port of the NPU at once (multi-port load/store and
        // DMA: the paper's section 3 gives each die 7 UB links, one per plane, and the NPU's
        // 392 GB/s is their sum), and the L1 chips spread it over the L2 chips of their plane.
        // The RDMA plane (RoCE) hashes per flow, as Ethernet ECMP does.
        for (const auto cls : {ub_class, d2d_class, package_class})
          b.set_multipath(cls, Multipath::kSpray);
        std::vector<std::vector<NodeId>> hosts;
        for (int s = 0; s < supernodes; ++s) {
          const std::string sn = supernodes == 1 ? "" : fmt::format("sn{}.", s);
          std::vector<NodeId> domain;
          std::vector<std::vector<NodeId>> l1(kNodes);
          std::vector<std::vector<NodeId>> node_members(kNodes);
          for (int n = 0; n < kNodes; ++n) {
            const std::string node = fmt::format("{}node{}", sn, n);
            std::vector<NodeId> members;
            for (int k = 0; k < kL1PerNode; ++k) {
              l1[n].push_back(b.add_node(fmt::format("{}.l1.{}", node, k), NodeKind::kSwitch));
              members.push_back(l1[n].back());
            }
            std::vector<NodeId> nics;
            for (int i = 0; i < kNpusPerNode; ++i) {
              const std::string npu_name = fmt::format("{}.npu{}", node, i);
              const NodeId npu = b.add_node(npu_name, NodeKind::kAccelerator);
              members.push_back(npu);
              NodeId die[kDies];
              for (int d = 0; d < kDies; ++d) {
                die[d] = b.add_node(fmt::format("{}.die{}", npu_name, d), NodeKind::kDie,
                                    NodeOptions{false, std::nullopt, npu});
                members.push_back(die[d]);
                b.add_duplex(npu, die[d], package, Time::zero(), package_class);
                for (int k = 0; k < kL1PerNode; ++k) {
                  b.add_duplex(die[d], l1[n][static_cast<std::size_t>(k)], ub, ub_latency,
                               ub_class);
                }
              }
              b.add_duplex(die[0], die[1], d2d, d2d_latency, d2d_class);
              const NodeId nic = b.add_node(npu_name + ".nic", NodeKind::kNic,
                                            NodeOptions{false, std::nullopt, npu});
              b.add_duplex(npu, nic, rdma, Time::zero(), port_class);
              nics.push_back(nic);
            }
            domain.insert(domain.end(), members.begin(), members.end());
            for (NodeId nic : nics)
              members.push_back(nic);
            node_members[static_cast<std::size_t>(n)] = members;
            b.add_group(GroupKind::kNode, node, std::move(members));
            hosts.push_back(std::move(nics));
          }
          for (int k = 0; k < kL1PerNode; ++k) {
            std::vector<NodeId> plane;
            for (int j = 0; j < kL2PerPlane; ++j) {
              const NodeId l2 =
                  b.add_node(fmt::format("{}l2.plane{}.{}", sn, k, j), NodeKind::kSwitch);
              plane.push_back(l2);
              domain.push_back(l2);
              for (int n = 0; n < kNodes; ++n) {
                b.add_duplex(l1[static_cast<std::size_t>(n)][static_cast<std::size_t>(k)], l2, ub,
                             ub_latency, ub_class);
              }
            }
            for (int n = 0; n < kNodes; ++n) {
              plane.push_back(l1[static_cast<std::size_t>(n)][static_cast<std::size_t>(k)]);
            }
            b.add_group(GroupKind::kPlane, fmt::format("{}plane{}", sn, k), std::move(plane));
          }
          for (int r = 0; r < kNodes / kNodesPerRack; ++r) {
            std::vector<NodeId> rack;
            for (int n = r * kNodesPerRack; n < (r + 1) * kNodesPerRack; ++n) {
              const auto& m = node_members[static_cast<std::size_t>(n)];
              rack.insert(rack.end(), m.begin(), m.end());
            }
            b.add_group(GroupKind::kRack, fmt::format("{}rack{}", sn, r), std::move(rack));
          }
          b.add_group(GroupKind::kScaleUp, supernodes == 1 ? "supernode" : fmt::format("sn{}", s),
                      std::move(domain));
        }
        add_fat_tree(b, spec, hosts, p);
        return std::move(b).build();
      }});
}

}  // namespace stepsim::topology
