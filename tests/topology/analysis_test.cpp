// Analysis: max-flow bisection against the fat-tree closed form, diameter, per-accelerator
// bandwidth; exports through Boost.Graph writers.
#include <gtest/gtest.h>

#include <sstream>

#include "test_util.hpp"
#include "topology/analysis.hpp"
#include "topology/graph_export.hpp"

namespace stepsim::topology {
namespace {

using testing::preset;

TEST(Analysis, MaxFlowBisectionEqualsTheFatTreeClosedForm) {
  // The closed forms (fat_tree_test) checked independently by push-relabel max-flow on the graph.
  for (const char* spec :
       {"fat-tree:tiers=3,radix=4,hosts=16", "fat-tree:radix=8,hosts=24,oversubscription=3",
        "fat-tree:tiers=3,radix=8,hosts=72,oversubscription=[3,3]", "dgx-h100-superpod:nodes=64",
        "selene:nodes=40"}) {
    const Topology t = preset(spec);
    EXPECT_DOUBLE_EQ(max_flow_bisection(t).value(), t.fabrics().at(0).bisection.value()) << spec;
  }
}

TEST(Analysis, SingleDgxBisectionIsHalfTheGpusNvlink) {
  // 4 GPUs on each side of the NVSwitch, 450 GB/s each: 1.8 TB/s; diameter 2 (GPU-switch-GPU).
  const Analysis a = analyze(preset("dgx-h100"));
  EXPECT_DOUBLE_EQ(a.bisection.bandwidth.value(), 4 * 450e9);
  EXPECT_EQ(a.diameter.hops, 2u);
  EXPECT_TRUE(a.diameter.exact);
}

TEST(Analysis, LargeGraphsUseTheFabricClosedForm) {
  // With max-flow disabled, a cluster reports its fabric's closed form and says so.
  const Topology t = preset("dgx-h100-superpod:nodes=64");
  const Analysis a = analyze(t, AnalysisOptions{0, 8});
  EXPECT_TRUE(a.bisection.computed);
  EXPECT_DOUBLE_EQ(a.bisection.bandwidth.value(), 256 * 50e9);
  EXPECT_NE(a.bisection.method.find("closed form"), std::string::npos);
  EXPECT_EQ(a.diameter.sources, 8u);
  EXPECT_FALSE(a.diameter.exact);
  EXPECT_EQ(a.diameter.hops, 6u);  // gpu, nic, leaf, spine, leaf, nic, gpu
}

TEST(GraphExport, DotAndGraphMlNameEveryNodeAndLink) {
  const Topology t = preset("dgx-a100");
  std::ostringstream dot;
  write_dot(dot, t);
  EXPECT_NE(dot.str().find("label=\"node0.gpu7\""), std::string::npos);
  EXPECT_NE(dot.str().find("label=\"300 GB/s\",class=\"nvlink\",latency_ps=150000"),
            std::string::npos)
      << dot.str().substr(0, 400);
  std::ostringstream graphml;
  write_graphml(graphml, t);
  const std::string g = graphml.str();
  EXPECT_NE(g.find("node0.nvswitch"), std::string::npos);
  std::size_t edges = 0;
  for (std::size_t at = g.find("<edge "); at != std::string::npos; at = g.find("<edge ", at + 1)) {
    ++edges;
  }
  EXPECT_EQ(edges, t.num_links());
}

}  // namespace
}  // namespace stepsim::topology
