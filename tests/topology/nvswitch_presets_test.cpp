// Counts and bandwidths of the NVLink presets against the vendors' published figures.
#include <gtest/gtest.h>

#include "test_util.hpp"

namespace stepsim::topology {
namespace {

using testing::egress;
using testing::preset;

struct Published {
  const char* name;
  std::size_t gpus;
  double nvlink_gb_per_s;  // per GPU per direction
  double nic_gbps;
  bool nvls;
};

class NvSwitchPreset : public ::testing::TestWithParam<Published> {};

TEST_P(NvSwitchPreset, MatchesPublishedFigures) {
  const Published& p = GetParam();
  const Topology t = preset(p.name);
  EXPECT_EQ(t.accelerators().size(), p.gpus);
  EXPECT_EQ(t.count(NodeKind::kNic), p.gpus);  // one NIC per GPU
  const auto single = t.find_node("node0.nvswitch");
  const NodeId nvswitch = single ? *single : *t.find_node("nvl0.nvswitch");
  EXPECT_EQ(t.node(nvswitch).in_network_reduction, p.nvls);
  for (NodeId gpu : t.accelerators()) {
    EXPECT_DOUBLE_EQ(egress(t, gpu, "nvlink"), p.nvlink_gb_per_s * 1e9) << t.name(gpu);
    ASSERT_EQ(t.nics(gpu).size(), 1u);
    EXPECT_EQ(t.node(t.nics(gpu)[0].nic).owner, gpu);
  }
  // One scale-up domain holding every GPU.
  const auto domain = t.group_of(t.accelerators().front(), GroupKind::kScaleUp);
  ASSERT_TRUE(domain);
  for (NodeId gpu : t.accelerators())
    EXPECT_EQ(t.group_of(gpu, GroupKind::kScaleUp), domain);
}

// DGX A100 white paper: 8 GPUs, NVLink3 600 GB/s bidirectional = 300 per direction, no NVLS.
// DGX H100/H200: NVLink4 900 GB/s bidirectional = 450 per direction, NVLS. DGX B200 and GB200
// NVL72: NVLink5 1.8 TB/s bidirectional = 900 per direction, NVLS.
INSTANTIATE_TEST_SUITE_P(Published, NvSwitchPreset,
                         ::testing::Values(Published{"dgx-a100", 8, 300, 200, false},
                                           Published{"dgx-h100", 8, 450, 400, true},
                                           Published{"dgx-h200", 8, 450, 400, true},
                                           Published{"dgx-b200", 8, 900, 400, true},
                                           Published{"gb200-nvl72", 72, 900, 400, true}),
                         [](const auto& param_info) {
                           std::string n = param_info.param.name;
                           for (char& c : n)
                             c = c == '-' ? '_' : c;
                           return n;
                         });

TEST(Gb200Nvl72, HasEighteenTraysAndThirtySixGraceCpus) {
  // GB200 NVL72: 18 compute trays of 4 GPUs and 2 Grace CPUs; NVLink-C2C 900 GB/s bidirectional.
  const Topology t = preset("gb200-nvl72");
  EXPECT_EQ(t.count(NodeKind::kCpu), 36u);
  std::size_t trays = 0;
  for (const Group& g : t.groups())
    trays += g.kind == GroupKind::kNode ? 1 : 0;
  EXPECT_EQ(trays, 18u);
  const NodeId cpu = *t.find_node("nvl0.tray0.cpu0");
  EXPECT_DOUBLE_EQ(egress(t, cpu, "nvlink-c2c"), 2 * 450e9);  // two GPUs per Grace
}

TEST(DgxH100Superpod, OneScalableUnitIsThirtyTwoNodesOnRailLeaves) {
  // SuperPOD H100 reference architecture: 32 nodes per SU, 8 rails, QM9700 64-port 400G switches.
  // One SU: 8 rail leaves (32 NICs each down, 32 up) and 32 spines; 256 GPUs, 256 NICs.
  const Topology t = preset("dgx-h100-superpod");
  EXPECT_EQ(t.accelerators().size(), 256u);
  EXPECT_EQ(t.count(NodeKind::kNic), 256u);
  EXPECT_EQ(t.count(NodeKind::kSwitch), 32u + 8u + 32u);  // NVSwitch vertices, leaves, spines
  ASSERT_EQ(t.fabrics().size(), 1u);
  const FabricSummary& f = t.fabrics()[0];
  ASSERT_EQ(f.tiers.size(), 2u);
  EXPECT_EQ(f.tiers[0].switches, 8u);
  EXPECT_EQ(f.tiers[1].switches, 32u);
  EXPECT_DOUBLE_EQ(f.tiers[0].oversubscription, 1.0);
  EXPECT_DOUBLE_EQ(f.port_bandwidth.value(), 50e9);  // 400 Gb/s
  // NIC i of node n on leaf i (rail-optimized).
  for (int node : {0, 17, 31}) {
    for (int rail = 0; rail < 8; ++rail) {
      const NodeId nic =
          *t.find_node("node" + std::to_string(node) + ".nic" + std::to_string(rail));
      bool on_rail = false;
      const auto range = t.out_links(nic);
      for (std::uint32_t i = range.first; i < range.first + range.count; ++i) {
        on_rail |= t.name(t.target(LinkIndex(i))) == "leaf" + std::to_string(rail);
      }
      EXPECT_TRUE(on_rail) << node << "." << rail;
    }
  }
  // Full bisection: 128 nodes' worth of NICs on each side = 128 x 50 GB/s.
  EXPECT_DOUBLE_EQ(f.bisection.value(), 128 * 50e9);
}

TEST(DgxH100Superpod, FourScalableUnitsStayOnTwoTiers) {
  // 4 SUs = 128 nodes: 32 rail leaves, 32 spines of 32 used ports (2 tiers fit up to 64 leaves).
  const Topology t = preset("dgx-h100-superpod:nodes=128");
  EXPECT_EQ(t.accelerators().size(), 1024u);
  EXPECT_EQ(t.fabrics()[0].tiers.size(), 2u);
  EXPECT_EQ(t.fabrics()[0].tiers[0].switches, 32u);
}

TEST(Selene, TwentyNodeUnitsOnFortyPortHdr) {
  // DGX SuperPOD A100: 20 nodes per SU, QM8700 40-port HDR: 20 down / 20 up per leaf.
  const Topology t = preset("selene:nodes=40");
  EXPECT_EQ(t.accelerators().size(), 320u);
  const FabricSummary& f = t.fabrics()[0];
  EXPECT_EQ(f.tiers[0].switches, 2u * 8u);  // 2 SUs x 8 rails
  EXPECT_EQ(f.tiers[1].switches, 20u);
  EXPECT_DOUBLE_EQ(f.port_bandwidth.value(), 25e9);  // 200 Gb/s
  EXPECT_DOUBLE_EQ(f.bisection.value(), 160 * 25e9);
}

}  // namespace
}  // namespace stepsim::topology
