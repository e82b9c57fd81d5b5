// Fat-tree structure and its bisection bandwidth against the closed forms.
#include <gtest/gtest.h>

#include "sim/common/input_error.hpp"
#include "test_util.hpp"
#include "topology/builder_registry.hpp"
#include "topology/fat_tree.hpp"

namespace stepsim::topology {
namespace {

using testing::preset;

TEST(FatTree, KAryCountsAndBisectionMatchTheClosedForm) {
  // k-ary fat-tree (Al-Fares et al., SIGCOMM 2008): k^3/4 hosts, k^2/2 edge (leaf) and k^2/2
  // aggregation switches, k^2/4 core switches; bisection k^3/8 links.
  for (int k : {4, 8}) {
    const Topology t = preset("fat-tree:tiers=3,radix=" + std::to_string(k) +
                              ",hosts=" + std::to_string(k * k * k / 4) + ",nic_speed=100Gbps");
    const FabricSummary& f = t.fabrics().at(0);
    const auto kk = static_cast<std::size_t>(k);
    EXPECT_EQ(t.accelerators().size(), kk * kk * kk / 4);
    ASSERT_EQ(f.tiers.size(), 3u);
    EXPECT_EQ(f.tiers[0].switches, kk * kk / 2);
    EXPECT_EQ(f.tiers[1].switches, kk * kk / 2);
    EXPECT_EQ(f.tiers[2].switches, kk * kk / 4);
    EXPECT_EQ(t.count(NodeKind::kSwitch), 5 * kk * kk / 4);
    EXPECT_DOUBLE_EQ(f.bisection.value(), static_cast<double>(k * k * k) / 8 * 12.5e9);
  }
}

TEST(FatTree, OversubscriptionDividesTheBisection) {
  // Radix 8, leaves 3:1 (6 down, 2 up), 24 hosts: 4 leaves, 2 spines. Bisection = 12 hosts x
  // 50 GB/s / 3 = 200 GB/s; non-blocking (4 down, 4 up, 6 leaves) it is 12 x 50 GB/s.
  const Topology over = preset("fat-tree:radix=8,hosts=24,oversubscription=3");
  const FabricSummary& f = over.fabrics().at(0);
  EXPECT_EQ(f.tiers[0].switches, 4u);
  EXPECT_EQ(f.tiers[1].switches, 2u);
  EXPECT_DOUBLE_EQ(f.tiers[0].oversubscription, 3.0);
  EXPECT_DOUBLE_EQ(f.bisection.value(), 12 * 50e9 / 3);
  const Topology full = preset("fat-tree:radix=8,hosts=24");
  EXPECT_DOUBLE_EQ(full.fabrics().at(0).bisection.value(), 12 * 50e9);
}

TEST(FatTree, ThreeTierOversubscriptionMultiplies) {
  // Radix 8, leaves 3:1 and spines 3:1: 6 hosts per leaf, 6 leaves per pod, 2 pods for 72 hosts.
  // Bisection = 36 hosts x 50 GB/s / (3 x 3) = 200 GB/s.
  const Topology t = preset("fat-tree:tiers=3,radix=8,hosts=72,oversubscription=[3,3]");
  EXPECT_DOUBLE_EQ(t.fabrics().at(0).bisection.value(), 36 * 50e9 / 9);
}

TEST(FatTree, RadixTooSmallForTheHostsIsAnInputError) {
  // Radix 4 on 2 tiers: at most 4 leaves of 2 hosts = 8 hosts.
  try {
    preset("fat-tree:radix=4,hosts=9");
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("use tiers: 3 or a larger radix"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(preset("fat-tree:tiers=3,radix=4,hosts=17"), InputError);  // k^3/4 = 16
  EXPECT_NO_THROW(preset("fat-tree:tiers=3,radix=4,hosts=16"));
}

TEST(FatTree, AFabricTooLargeForItsSwitchesIsRefusedBeforeItsHostsAreBuilt) {
  // The fuzzer's slow inputs (docs/reliability.md): 50,000 DGX nodes on radix-19 switches, 10
  // million hosts on radix 8, 1,024 CloudMatrix384 supernodes on a radix-16 RDMA plane. Each is
  // refused by the fabric's own check (the message names the NICs and the radix) before a host is
  // built; check_fat_tree is that check alone.
  for (const char* spec :
       {"cluster:nodes=50083,radix=19,rail_optimized=false", "fat-tree:hosts=10000000,radix=8",
        "cloudmatrix384:supernodes=1024,rdma_radix=16"}) {
    SCOPED_TRACE(spec);
    try {
      preset(spec);
      FAIL() << "expected an InputError";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("a larger radix"), std::string::npos) << e.what();
    }
  }
  FatTreeSpec spec;
  spec.radix = 4;
  const ParamReader where("fat-tree", {}, std::nullopt);
  EXPECT_THROW(check_fat_tree(spec, 9, 1, where), InputError);
  EXPECT_NO_THROW(check_fat_tree(spec, 8, 1, where));
}

TEST(FatTree, RailOptimizedPutsNicIOnRailI) {
  // 4 hosts x 4 NICs, radix 8 (4 down): one block of 4 hosts, leaf r holds NIC r of each host.
  const Topology t = preset("fat-tree:radix=8,hosts=4,nics_per_host=4,rail_optimized=true");
  for (int h = 0; h < 4; ++h) {
    for (int r = 0; r < 4; ++r) {
      const NodeId nic = *t.find_node("host" + std::to_string(h) + ".nic" + std::to_string(r));
      const auto range = t.out_links(nic);
      bool found = false;
      for (std::uint32_t i = range.first; i < range.first + range.count; ++i) {
        found |= t.name(t.target(LinkIndex(i))) == "leaf" + std::to_string(r);
      }
      EXPECT_TRUE(found);
    }
  }
}

}  // namespace
}  // namespace stepsim::topology
