// The YAML graph format and its errors (each names where and what).
#include <gtest/gtest.h>

#include "sim/common/input_error.hpp"
#include "test_util.hpp"

namespace stepsim::topology {
namespace {

using testing::from_yaml;

std::string error_of(const std::string& yaml) {
  try {
    from_yaml(yaml);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

constexpr const char* kTwoNodes = R"(name: pair
nodes:
  - {name: "n{}.gpu", kind: accelerator, count: 2}
  - {name: sw, kind: switch, in_network_reduction: true}
links:
  - {from: n0.gpu, to: sw, bandwidth: 400Gbps, latency: 1us, class: ib, duplex: true}
  - {from: n1.gpu, to: sw, bandwidth: 50GB/s, latency: 1us, class: ib}
  - {from: sw, to: n1.gpu, bandwidth: 25GB/s, class: ib}
groups:
  - {kind: rack, name: r0, members: [n0.gpu, n1.gpu, sw]}
efficiency: {ib: 0.9}
)";

TEST(GraphReader, ReadsNodesLinksUnitsDuplexAndGroups) {
  const Topology t = from_yaml(kTwoNodes);
  EXPECT_EQ(t.name(), "pair");
  EXPECT_EQ(t.accelerators().size(), 2u);
  EXPECT_EQ(t.num_links(), 4u);  // duplex counts twice
  const NodeId sw = *t.find_node("sw");
  EXPECT_TRUE(t.node(sw).in_network_reduction);
  const auto range = t.out_links(sw);
  ASSERT_EQ(range.count, 2u);
  for (std::uint32_t i = range.first; i < range.first + range.count; ++i) {
    const LinkIndex l(i);
    // 400 Gbps = 50e9 B/s both ways to n0; the one-way link back to n1 is 25 GB/s.
    EXPECT_DOUBLE_EQ(t.bandwidth(l).value(), t.name(t.target(l)) == "n0.gpu" ? 50e9 : 25e9);
    EXPECT_DOUBLE_EQ(t.effective_bandwidth(l).value(), 0.9 * t.bandwidth(l).value());
  }
  EXPECT_EQ(t.latency(LinkIndex(0)), Time::us(1));  // n0.gpu -> sw, 1us
  EXPECT_EQ(t.group(*t.group_of(sw, GroupKind::kRack)).name, "r0");
}

TEST(GraphReader, UnknownNodeInALinkSuggestsTheClosestName) {
  std::string yaml = kTwoNodes;
  yaml.replace(yaml.find("to: sw, bandwidth: 50GB/s"), 6, "to: sx");
  EXPECT_EQ(error_of(yaml), "test.yaml:7:24: links[1].to: no node named 'sx' (did you mean 'sw'?)");
}

TEST(GraphReader, DuplicateNameSaysWhereTheFirstOneIs) {
  const std::string e = error_of(R"(nodes:
  - {name: a, kind: accelerator}
  - {name: a, kind: switch}
)");
  EXPECT_NE(e.find("test.yaml:3:"), std::string::npos) << e;
  EXPECT_NE(e.find("duplicate node name 'a' (first defined at test.yaml:2:"), std::string::npos)
      << e;
}

TEST(GraphReader, ZeroOrNegativeBandwidthIsRejected) {
  std::string zero = kTwoNodes;
  zero.replace(zero.find("25GB/s"), 6, "0GB/s");
  EXPECT_NE(error_of(zero).find("links[2].bandwidth: expected a positive bandwidth, got '0GB/s'"),
            std::string::npos)
      << error_of(zero);
  std::string negative = kTwoNodes;
  negative.replace(negative.find("25GB/s"), 6, "-5GB/s");
  EXPECT_NE(error_of(negative).find("test.yaml:8:39: links[2].bandwidth"), std::string::npos)
      << error_of(negative);
}

TEST(GraphReader, DisconnectedAcceleratorsNameTheTopologyAndLocation) {
  const std::string e = error_of(R"(nodes:
  - {name: a, kind: accelerator}
  - {name: b, kind: accelerator}
  - {name: s, kind: switch}
links:
  - {from: a, to: s, bandwidth: 1GB/s, duplex: true}
  - {from: s, to: b, bandwidth: 1GB/s}
)");
  EXPECT_NE(e.find("test.yaml:1:1"), std::string::npos) << e;
  EXPECT_NE(e.find("accelerator 'b' is disconnected from 'a' (no path back from it"),
            std::string::npos)
      << e;
}

TEST(GraphReader, UnknownKindAndKeysAreReported) {
  EXPECT_NE(error_of("nodes:\n  - {name: a, kind: gpu}\n").find("did you mean"), std::string::npos);
  EXPECT_NE(
      error_of("nodes:\n  - {name: a, kind: accelerator, bandwidht: 1}\n").find("unknown key"),
      std::string::npos);
}

}  // namespace
}  // namespace stepsim::topology
