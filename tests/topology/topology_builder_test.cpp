// The graph model: dense ids, link numbering shared with Boost.Graph, groups, NIC attachments.
#include <gtest/gtest.h>

#include <boost/graph/breadth_first_search.hpp>

#include "sim/common/input_error.hpp"
#include "topology/topology_builder.hpp"

namespace stepsim::topology {
namespace {

Topology two_gpus_and_a_switch() {
  TopologyBuilder b("t");
  const NodeId sw = b.add_node("sw", NodeKind::kSwitch, NodeOptions{true, std::nullopt, NodeId()});
  const NodeId g0 = b.add_node("g0", NodeKind::kAccelerator);
  const NodeId g1 = b.add_node("g1", NodeKind::kAccelerator);
  const NodeId nic = b.add_node("nic", NodeKind::kNic, NodeOptions{false, std::nullopt, g1});
  const auto nv = b.link_class("nvlink");
  b.add_duplex(g1, sw, BytesPerSecond::gigabytes(450), Time::ns(150), nv);
  b.add_duplex(g0, sw, BytesPerSecond::gigabytes(450), Time::ns(150), nv);
  b.add_duplex(g1, nic, BytesPerSecond::gigabytes(63), Time::ns(500), b.link_class("pcie"));
  b.add_group(GroupKind::kScaleUp, "box", {g0, g1, sw});
  return std::move(b).build();
}

TEST(TopologyBuilder, LinksAreDenseAndNumberedBySourceLikeTheBoostGraph) {
  const Topology t = two_gpus_and_a_switch();
  EXPECT_EQ(t.num_nodes(), 4u);
  EXPECT_EQ(t.num_links(), 6u);
  for (std::uint32_t l = 1; l < t.num_links(); ++l) {
    EXPECT_LE(t.source(LinkIndex(l - 1)).value(), t.source(LinkIndex(l)).value());
  }
  // The Boost graph's edge_index of every edge is its LinkIndex, with the same endpoints.
  for (auto [it, end] = boost::edges(t.graph()); it != end; ++it) {
    const LinkIndex l(boost::get(boost::edge_index, t.graph(), *it));
    EXPECT_EQ(boost::source(*it, t.graph()), t.source(l).value());
    EXPECT_EQ(boost::target(*it, t.graph()), t.target(l).value());
  }
  // out_links and in_links agree with the link table.
  for (std::uint32_t v = 0; v < t.num_nodes(); ++v) {
    const auto range = t.out_links(NodeId(v));
    for (std::uint32_t i = range.first; i < range.first + range.count; ++i) {
      EXPECT_EQ(t.source(LinkIndex(i)), NodeId(v));
    }
    for (LinkIndex l : t.in_links(NodeId(v)))
      EXPECT_EQ(t.target(l), NodeId(v));
  }
}

TEST(TopologyBuilder, KeepsAcceleratorOrderGroupsAndNics) {
  const Topology t = two_gpus_and_a_switch();
  ASSERT_EQ(t.accelerators().size(), 2u);
  EXPECT_EQ(t.name(t.accelerators()[0]), "g0");  // topology order = order of addition
  EXPECT_EQ(t.accelerator_index(*t.find_node("g1")), 1u);
  EXPECT_FALSE(t.accelerator_index(*t.find_node("sw")));
  EXPECT_TRUE(t.node(*t.find_node("sw")).in_network_reduction);
  EXPECT_FALSE(t.node(*t.find_node("g0")).forwards);
  EXPECT_EQ(t.nics(*t.find_node("g0")).size(), 0u);
  ASSERT_EQ(t.nics(*t.find_node("g1")).size(), 1u);
  EXPECT_EQ(t.describe(t.nics(*t.find_node("g1"))[0].to_nic), "g1 -> nic");
  EXPECT_EQ(t.group(*t.group_of(*t.find_node("g0"), GroupKind::kScaleUp)).name, "box");
  EXPECT_FALSE(t.group_of(*t.find_node("nic"), GroupKind::kScaleUp));
}

TEST(TopologyBuilder, EfficiencyScalesLineRate) {
  Topology t = two_gpus_and_a_switch();
  ASSERT_TRUE(t.set_efficiency("nvlink", 0.8));
  EXPECT_FALSE(t.set_efficiency("ethernet", 0.8));
  const LinkIndex first(0);
  if (t.link_class(first).name == "nvlink") {
    EXPECT_DOUBLE_EQ(t.effective_bandwidth(first).value(), 0.8 * 450e9);
  } else {
    EXPECT_DOUBLE_EQ(t.effective_bandwidth(first).value(), t.bandwidth(first).value());
  }
}

TEST(TopologyBuilder, DisconnectedAcceleratorIsAnInputError) {
  TopologyBuilder b("islands");
  b.add_node("g0", NodeKind::kAccelerator);
  b.add_node("g1", NodeKind::kAccelerator);
  try {
    std::move(b).build();
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'g1' is disconnected from 'g0'"), std::string::npos)
        << e.what();
  }
}

TEST(TopologyBuilder, DuplicateNamesAreBugsInBuilders) {
  TopologyBuilder b("dup");
  b.add_node("x", NodeKind::kSwitch);
  EXPECT_THROW(b.add_node("x", NodeKind::kSwitch), std::logic_error);
}

}  // namespace
}  // namespace stepsim::topology
