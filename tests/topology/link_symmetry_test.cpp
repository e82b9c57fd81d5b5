// Symmetric links (topology/link_symmetry.hpp): which links the flow network may keep one of, and
// the property that makes it exact: every sprayed route loads the links of a group with the same
// share, to the bit, and crosses all of them or none.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "test_util.hpp"
#include "topology/link_symmetry.hpp"
#include "topology/router.hpp"

namespace stepsim::topology {
namespace {

using testing::preset;

// Links whose representative is another link.
std::size_t aliased(const std::vector<LinkIndex>& rep) {
  std::size_t n = 0;
  for (std::uint32_t l = 0; l < rep.size(); ++l)
    n += rep[l].value() != l ? 1 : 0;
  return n;
}

// Routes every pair of the given accelerators in `mode` and checks each route against the groups:
// every member of a group the route crosses is crossed, with the representative's share exactly.
// Returns the number of route entries the groups save.
std::size_t expect_loaded_alike(const Topology& t, EcmpMode mode,
                                const std::vector<std::uint32_t>& ranks) {
  const std::vector<LinkIndex> rep = symmetric_link_representatives(t, mode);
  std::vector<std::uint32_t> members(rep.size(), 0);
  for (const LinkIndex r : rep)
    ++members[r.value()];
  Router router(t);
  std::size_t saved = 0;
  for (const std::uint32_t a : ranks) {
    for (const std::uint32_t b : ranks) {
      if (a == b) continue;
      const MultipathRoute route =
          router.multipath(t.accelerators()[a], t.accelerators()[b], 0, mode);
      std::map<std::uint32_t, std::vector<double>> by_group;  // representative -> shares
      if (route.sprayed()) {
        for (const LinkShare& s : route.shares)
          by_group[rep[s.link.value()].value()].push_back(s.share);
      } else {
        for (const LinkIndex l : route.path)
          by_group[rep[l.value()].value()].push_back(1.0);
      }
      for (const auto& [r, shares] : by_group) {
        EXPECT_EQ(shares.size(), members[r]) << "route " << a << " -> " << b << " crosses part of "
                                             << "the group of link " << t.describe(LinkIndex(r));
        for (const double s : shares)
          EXPECT_EQ(s, shares.front()) << "route " << a << " -> " << b << ", group of link " << r;
        saved += shares.size() - 1;
      }
    }
  }
  return saved;
}

TEST(LinkSymmetry, CloudMatrixL2ChipsOfAPlaneAreTwins) {
  // Each of the 7 planes has 16 L2 chips, each with one UB link to and from the plane's L1 chip
  // of every node (48 nodes): an L1 chip's 16 links up form one group, its 16 links down another.
  // The dies are not grouped: the NPU feeding them also has an RDMA port, which hashes.
  const Topology t = preset("cloudmatrix384");
  const std::vector<LinkIndex> rep = symmetric_link_representatives(t, EcmpMode::kFabric);
  EXPECT_EQ(aliased(rep), 7u * 48 * 2 * 15);
  // Hashed routes take one L2 chip per transfer: nothing is grouped.
  EXPECT_EQ(aliased(symmetric_link_representatives(t, EcmpMode::kHash)), 0u);
  EXPECT_EQ(aliased(symmetric_link_representatives(t, EcmpMode::kSpread)), 0u);
}

TEST(LinkSymmetry, CloudMatrixRoutesLoadEveryGroupAlike) {
  // NPUs of one node, of two nodes, and a die's neighbours: 256 links per route between nodes,
  // of which the groups leave 46 (the 2 x 112 links through the L2 chips become 2 x 7).
  const Topology t = preset("cloudmatrix384");
  const std::size_t saved = expect_loaded_alike(t, EcmpMode::kFabric, {0, 1, 7, 8, 9, 100, 383});
  EXPECT_GT(saved, 0u);
  Router router(t);
  const MultipathRoute route =
      router.multipath(t.accelerators()[0], t.accelerators()[8], 0, EcmpMode::kFabric);
  const std::vector<LinkIndex> rep = symmetric_link_representatives(t, EcmpMode::kFabric);
  std::size_t kept = 0;
  for (const LinkShare& s : route.shares)
    kept += rep[s.link.value()] == s.link ? 1 : 0;
  EXPECT_EQ(route.shares.size(), 256u);
  EXPECT_EQ(kept, 46u);
}

TEST(LinkSymmetry, SprayedFatTreeGroupsItsSpines) {
  // A two-level non-blocking fat-tree (16 hosts on 4 leaves of radix 8, 4 spines on every leaf):
  // sprayed, a leaf's 4 up-links are one group and each spine's links down to a leaf are one
  // group with the other spines'. Hashed, nothing.
  const Topology t = preset("fat-tree:hosts=16,radix=8");
  const std::vector<LinkIndex> spray = symmetric_link_representatives(t, EcmpMode::kSpray);
  EXPECT_GT(aliased(spray), 0u);
  std::vector<std::uint32_t> all;
  for (std::uint32_t r = 0; r < t.accelerators().size(); ++r)
    all.push_back(r);
  EXPECT_GT(expect_loaded_alike(t, EcmpMode::kSpray, all), 0u);
  EXPECT_EQ(aliased(symmetric_link_representatives(t, EcmpMode::kHash)), 0u);
  // Fabric mode on InfiniBand hashes: no group, and the routes are single paths.
  EXPECT_EQ(aliased(symmetric_link_representatives(t, EcmpMode::kFabric)), 0u);
}

TEST(LinkSymmetry, EveryPresetsRoutesLoadTheirGroupsAlike) {
  // Whatever each preset groups in fabric and spray mode, its routes honour it.
  for (const char* spec : {"dgx-h100", "dgx-h100-superpod:nodes=2", "cloudmatrix384",
                           "ub-mesh-rack", "fat-tree:hosts=16,radix=8"}) {
    SCOPED_TRACE(spec);
    const Topology t = preset(spec);
    std::vector<std::uint32_t> ranks;
    const std::uint32_t n = static_cast<std::uint32_t>(t.accelerators().size());
    for (std::uint32_t r = 0; r < n; r += std::max<std::uint32_t>(1, n / 12))
      ranks.push_back(r);
    for (const EcmpMode mode : {EcmpMode::kFabric, EcmpMode::kSpray})
      expect_loaded_alike(t, mode, ranks);
  }
}

TEST(LinkSymmetry, ParallelLinksFromANodeThatSpraysAreOneGroup) {
  // Two switches joined by three parallel links of one class, between two hosts: sprayed, the
  // three carry a third each, alike; hashed, one of them carries the flow.
  const Topology t = testing::from_yaml(R"(
nodes:
  - {name: a, kind: accelerator}
  - {name: b, kind: accelerator}
  - {name: s1, kind: switch}
  - {name: s2, kind: switch}
links:
  - {from: a, to: s1, bandwidth: 100GB/s, latency: 1us, duplex: true}
  - {from: s1, to: s2, bandwidth: 50GB/s, latency: 1us, duplex: true}
  - {from: s1, to: s2, bandwidth: 50GB/s, latency: 1us, duplex: true}
  - {from: s1, to: s2, bandwidth: 50GB/s, latency: 1us, duplex: true}
  - {from: s2, to: b, bandwidth: 100GB/s, latency: 1us, duplex: true}
)");
  const std::vector<LinkIndex> spray = symmetric_link_representatives(t, EcmpMode::kSpray);
  EXPECT_EQ(aliased(spray), 4u);  // the three parallel links, each way: two of each three
  EXPECT_EQ(expect_loaded_alike(t, EcmpMode::kSpray, {0, 1}), 4u);
  EXPECT_EQ(aliased(symmetric_link_representatives(t, EcmpMode::kFabric)), 0u);
}

}  // namespace
}  // namespace stepsim::topology
