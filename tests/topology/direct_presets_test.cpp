// CloudMatrix384, UB-Mesh and the per-dimension builders against the papers' figures and closed
// forms.
#include <gtest/gtest.h>

#include <set>

#include "test_util.hpp"
#include "topology/analysis.hpp"
#include "topology/router.hpp"

namespace stepsim::topology {
namespace {

using testing::preset;

std::size_t groups_of(const Topology& t, GroupKind kind) {
  std::size_t n = 0;
  for (const Group& g : t.groups())
    n += g.kind == kind ? 1 : 0;
  return n;
}

TEST(CloudMatrix384, CountsAndBandwidthMatchThePaper) {
  // arXiv 2506.12708: 384 NPUs, 768 dies, 48 nodes, 7 L1 chips per node (336) and 7 sub-planes of
  // 16 L2 chips (112), 392 GB/s one-way UB bandwidth per NPU, 400 Gb/s RDMA per NPU.
  const Topology t = preset("cloudmatrix384");
  EXPECT_EQ(t.accelerators().size(), 384u);
  EXPECT_EQ(t.count(NodeKind::kDie), 768u);
  EXPECT_EQ(groups_of(t, GroupKind::kNode), 48u);
  EXPECT_EQ(groups_of(t, GroupKind::kPlane), 7u);
  std::size_t l1 = 0;
  std::size_t l2 = 0;
  for (std::uint32_t v = 0; v < t.num_nodes(); ++v) {
    const std::string& name = t.name(NodeId(v));
    l1 += name.find(".l1.") != std::string::npos ? 1 : 0;
    l2 += name.rfind("l2.", 0) == 0 ? 1 : 0;
  }
  EXPECT_EQ(l1, 336u);
  EXPECT_EQ(l2, 112u);
  const Analysis a = analyze(t);
  bool ub = false;
  bool roce = false;
  for (const ClassBandwidth& c : a.per_accelerator) {
    if (c.link_class == "ub") {
      ub = true;
      EXPECT_DOUBLE_EQ(c.min.value(), 392e9);
      EXPECT_DOUBLE_EQ(c.max.value(), 392e9);
    }
    if (c.link_class == "roce") {
      roce = true;
      EXPECT_DOUBLE_EQ(c.min.value(), 50e9);
    }
  }
  EXPECT_TRUE(ub && roce);
  // Die-to-die link present between the two dies of every NPU.
  const NodeId die0 = *t.find_node("node7.npu3.die0");
  bool d2d = false;
  const auto range = t.out_links(die0);
  for (std::uint32_t i = range.first; i < range.first + range.count; ++i) {
    d2d |= t.name(t.target(LinkIndex(i))) == "node7.npu3.die1";
  }
  EXPECT_TRUE(d2d);
}

TEST(CloudMatrix384, UbClosIsNonBlocking) {
  // Every L1 chip: 16 links down (8 NPUs x 2 dies) and 16 up, all 28 GB/s: down = up = 448 GB/s.
  const Topology t = preset("cloudmatrix384");
  const NodeId l1 = *t.find_node("node0.l1.0");
  double down = 0;
  double up = 0;
  const auto range = t.out_links(l1);
  for (std::uint32_t i = range.first; i < range.first + range.count; ++i) {
    const NodeKind k = t.kind(t.target(LinkIndex(i)));
    (k == NodeKind::kDie ? down : up) += t.bandwidth(LinkIndex(i)).value();
  }
  EXPECT_DOUBLE_EQ(down, 448e9);
  EXPECT_DOUBLE_EQ(up, 448e9);
  // NPU to NPU across nodes: die (2) x L1 (7) x L2 (16) x die (2) = 448 equal-cost UB paths, all
  // inside the supernode.
  Router router(t, RouterOptions{1024, 1 << 20});
  const Routes r = router.spread(*t.find_node("node0.npu0"), *t.find_node("node47.npu7"));
  EXPECT_EQ(r.equal_cost_paths, 448u);
  for (const Path& p : r.paths) {
    ASSERT_EQ(p.size(), 6u);  // npu, die, L1, L2, L1, die, npu
    EXPECT_EQ(t.link_class(p[2]).name, "ub");
  }
}

TEST(CloudMatrix384, SupernodesJoinThroughTheRdmaPlane) {
  const Topology t = preset("cloudmatrix384:supernodes=2");
  EXPECT_EQ(t.accelerators().size(), 768u);
  Router router(t);
  const Path p = router.route(*t.find_node("sn0.node0.npu0"), *t.find_node("sn1.node0.npu0"), 3);
  ASSERT_FALSE(p.empty());
  EXPECT_EQ(t.describe(p.front()), "sn0.node0.npu0 -> sn0.node0.npu0.nic");
  for (LinkIndex l : p)
    EXPECT_NE(t.link_class(l).name, "ub");
}

TEST(UbMesh, RackIsAnEightByEightFullMesh) {
  // arXiv 2503.20377: 64 NPUs per rack, each directly linked to 7 in its row and 7 in its column.
  const Topology t = preset("ub-mesh-rack");
  EXPECT_EQ(t.accelerators().size(), 64u);
  EXPECT_EQ(t.num_links(), 64u * 14u);
  const Analysis a = analyze(t);
  EXPECT_EQ(a.diameter.hops, 2u);  // one X hop and one Y hop
  Router router(t);
  // Same row: the direct link. Different row and column: 2 two-hop paths.
  EXPECT_EQ(router.spread(*t.find_node("npu0.0"), *t.find_node("npu0.5")).paths.at(0).size(), 1u);
  EXPECT_EQ(router.spread(*t.find_node("npu0.0"), *t.find_node("npu3.5")).equal_cost_paths, 2u);
}

TEST(UbMesh, PodIsAFourDimensionalFullMesh) {
  // 4 x 4 racks of 8 x 8: 1,024 NPUs; each has 7 + 7 + 3 + 3 = 20 links; diameter 4.
  const Topology t = preset("ub-mesh-pod");
  EXPECT_EQ(t.accelerators().size(), 1024u);
  EXPECT_EQ(t.num_links(), 1024u * 20u);
  EXPECT_EQ(analyze(t, AnalysisOptions{0, 16}).diameter.hops, 4u);
}

TEST(Dimensions, TorusBisectionIsTheClosedForm) {
  // k x k torus (k even): cutting it in half crosses 2k links each way. k = 4, 50 GB/s: 400 GB/s.
  const Topology t = preset("torus:dims=[4,4]");
  EXPECT_EQ(t.accelerators().size(), 16u);
  EXPECT_DOUBLE_EQ(max_flow_bisection(t).value(), 2 * 4 * 50e9);
  // 3D 4x4x4: 2 k^2 = 32 links: 1.6 TB/s; diameter 3 x k/2 = 6.
  const Topology t3 = preset("torus:dims=[4,4,4]");
  EXPECT_DOUBLE_EQ(max_flow_bisection(t3).value(), 32 * 50e9);
  EXPECT_EQ(analyze(t3).diameter.hops, 6u);
}

TEST(Dimensions, SwitchAndFullMeshDimensions) {
  // 8 ranks on one switch x 4-ring: 4 switches; a rank reaches a switch peer in 2 hops.
  const Topology t = preset(
      "dimensions:dims=[{size: 8, topology: switch, bandwidth: 100GB/s}, {size: 4, topology: "
      "full-mesh}]");
  EXPECT_EQ(t.accelerators().size(), 32u);
  EXPECT_EQ(t.count(NodeKind::kSwitch), 4u);
  Router router(t);
  EXPECT_EQ(router.route(t.accelerators()[0], t.accelerators()[5]).size(), 2u);   // via switch
  EXPECT_EQ(router.route(t.accelerators()[0], t.accelerators()[24]).size(), 1u);  // full mesh
}

}  // namespace
}  // namespace stepsim::topology
