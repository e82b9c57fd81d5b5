// Routing: shortest paths, ECMP hash (deterministic, collisions kept) and spread, the Clos
// up-down shortcut against breadth-first search, the scale-up-domain policy.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "sim/common/input_error.hpp"
#include "test_util.hpp"
#include "topology/router.hpp"
#include "topology/topology_builder.hpp"

namespace stepsim::topology {
namespace {

using testing::from_yaml;
using testing::preset;

// A copy of `t` without Clos labels, so the router must search.
Topology without_labels(const Topology& t) {
  TopologyBuilder b(t.name() + "-plain");
  for (std::uint32_t v = 0; v < t.num_nodes(); ++v) {
    const NodeInfo& n = t.node(NodeId(v));
    b.add_node(n.name, n.kind, NodeOptions{n.in_network_reduction, n.forwards, n.owner});
  }
  for (const LinkClass& c : t.link_classes())
    b.link_class(c.name);
  for (std::uint32_t l = 0; l < t.num_links(); ++l) {
    const LinkInfo& info = t.link(LinkIndex(l));
    b.add_link(info.source, info.target, info.bandwidth, info.latency, info.link_class);
  }
  return std::move(b).build();
}

void expect_valid_path(const Topology& t, const Path& path, NodeId from, NodeId to) {
  ASSERT_FALSE(path.empty());
  EXPECT_EQ(t.source(path.front()), from);
  EXPECT_EQ(t.target(path.back()), to);
  for (std::size_t i = 1; i < path.size(); ++i)
    EXPECT_EQ(t.source(path[i]), t.target(path[i - 1]));
}

TEST(Router, KAryFatTreePathCountsAreTheClosedForms) {
  // k = 4: hosts under the same leaf have 1 path, same pod k/2 = 2, other pods (k/2)^2 = 4
  // (Al-Fares et al. 2008). Each route adds the GPU->NIC and NIC->GPU links.
  const Topology t = preset("fat-tree:tiers=3,radix=4,hosts=16");
  Router router(t);
  const auto& acc = t.accelerators();
  const Routes same_leaf = router.spread(acc[0], acc[1]);
  EXPECT_EQ(same_leaf.equal_cost_paths, 1u);
  EXPECT_EQ(same_leaf.paths.at(0).size(), 4u);
  const Routes same_pod = router.spread(acc[0], acc[2]);
  EXPECT_EQ(same_pod.equal_cost_paths, 2u);
  EXPECT_EQ(same_pod.paths.at(0).size(), 6u);
  const Routes far = router.spread(acc[0], acc[15]);
  EXPECT_EQ(far.equal_cost_paths, 4u);
  ASSERT_EQ(far.paths.size(), 4u);
  std::set<Path> distinct(far.paths.begin(), far.paths.end());
  EXPECT_EQ(distinct.size(), 4u);
  for (const Path& p : far.paths) {
    EXPECT_EQ(p.size(), 8u);
    expect_valid_path(t, p, acc[0], acc[15]);
  }
  EXPECT_EQ(router.searches(), 0u);  // labels, no search
}

TEST(Router, UpDownRoutingAgreesWithBreadthFirstSearch) {
  // Every pair of a 3-tier fat-tree with 2 NICs per host: the labelled router and a search on the
  // same graph without labels find the same number of equal-cost paths of the same length.
  const Topology labelled = preset("fat-tree:tiers=3,radix=4,hosts=8,nics_per_host=2");
  const Topology plain = without_labels(labelled);
  Router fast(labelled);
  Router slow(plain);
  for (NodeId s : labelled.accelerators()) {
    for (NodeId d : labelled.accelerators()) {
      const Routes a = fast.spread(s, d);
      const Routes b = slow.spread(s, d);
      EXPECT_EQ(a.equal_cost_paths, b.equal_cost_paths) << labelled.name(s) << labelled.name(d);
      EXPECT_EQ(a.paths.front().size(), b.paths.front().size());
      EXPECT_EQ(std::set<Path>(a.paths.begin(), a.paths.end()),
                std::set<Path>(b.paths.begin(), b.paths.end()));
    }
  }
  EXPECT_GT(slow.searches(), 0u);
}

TEST(Router, HashIsDeterministicUsesAllPathsAndCollides) {
  const Topology t = preset("fat-tree:tiers=3,radix=4,hosts=16");
  const NodeId s = t.accelerators()[0];
  const NodeId d = t.accelerators()[15];
  Router a(t);
  Router b(t);
  std::set<Path> seen;
  for (std::uint64_t key = 0; key < 64; ++key) {
    const Path p = a.route(s, d, key);
    EXPECT_EQ(p, b.route(s, d, key));  // same input, same path, on a fresh router too
    expect_valid_path(t, p, s, d);
    seen.insert(p);
  }
  EXPECT_EQ(seen.size(), 4u);  // all (k/2)^2 = 4 equal-cost paths are used
  // Five flows on four paths: at least two share a path (the hash does not balance).
  std::set<Path> five;
  for (std::uint64_t key = 0; key < 5; ++key)
    five.insert(a.route(s, d, key));
  EXPECT_LT(five.size(), 5u);
}

TEST(Router, SpreadCapsThePathsEvenly) {
  // Radix 8, 3 tiers: (k/2)^2 = 16 paths between pods; with max_paths = 4 the router returns 4
  // distinct ones, each through a different aggregation switch (evenly spaced in path order).
  const Topology t = preset("fat-tree:tiers=3,radix=8,hosts=128");
  Router router(t, RouterOptions{4, 1 << 20});
  const Routes r = router.spread(t.accelerators()[0], t.accelerators()[127]);
  EXPECT_EQ(r.equal_cost_paths, 16u);
  ASSERT_EQ(r.paths.size(), 4u);
  std::set<LinkIndex> first_up;
  for (const Path& p : r.paths)
    first_up.insert(p.at(2));  // leaf -> spine link
  EXPECT_EQ(first_up.size(), 4u);
}

TEST(Router, FabricModeWithoutSprayingLinksIsTheHashedRoute) {
  // A fat-tree's links all hash (its preset sets no spraying): fabric and hash modes give
  // route()'s path for every key, and the route depends on the key exactly when route() has a
  // choice.
  const Topology t = preset("fat-tree:tiers=3,radix=4,hosts=16");
  Router router(t);
  EXPECT_FALSE(router.fabric_sprays());
  for (std::uint32_t d = 1; d < 16; ++d) {
    const NodeId src = t.accelerators()[0], dst = t.accelerators()[d];
    for (std::uint64_t key = 0; key < 8; ++key) {
      for (const EcmpMode mode : {EcmpMode::kFabric, EcmpMode::kHash}) {
        const MultipathRoute r = router.multipath(src, dst, key, mode);
        EXPECT_FALSE(r.sprayed());
        EXPECT_EQ(r.path, router.route(src, dst, key));
        EXPECT_EQ(r.key_dependent, !router.route_is_unique(src, dst));
        Time latency;
        for (const LinkIndex l : r.path)
          latency += t.latency(l);
        EXPECT_EQ(r.latency, latency);
      }
    }
  }
}

// Checks that `r` is a unit flow from `src` to `dst`: the shares leaving a node equal the shares
// entering it, 1 leaves the source and 1 enters the destination.
void expect_conserved(const Topology& t, const MultipathRoute& r, NodeId src, NodeId dst) {
  std::vector<double> net(t.num_nodes(), 0.0);
  for (const LinkShare& s : r.shares) {
    EXPECT_GT(s.share, 0.0);
    net[t.source(s.link).value()] -= s.share;
    net[t.target(s.link).value()] += s.share;
  }
  for (std::uint32_t v = 0; v < t.num_nodes(); ++v) {
    const double expected = v == src.value() ? -1.0 : v == dst.value() ? 1.0 : 0.0;
    EXPECT_NEAR(net[v], expected, 1e-12) << t.name(NodeId(v));
  }
}

TEST(Router, CloudMatrixSpraysOverBothDiesAndEverySevenPlanes) {
  // CloudMatrix384: NPU package -> 2 dies -> 7 L1 chips each (one per plane) -> 16 L2 chips of
  // the plane -> the destination node's L1 of that plane -> 2 dies -> package. Sprayed at every
  // hop: 1/2 on each package->die link, 1/14 on each die->L1 link (both dies reach the same 7
  // L1 chips, so each L1 takes 1/7), 1/112 on each L1->L2 and L2->L1 link, 1/14 on each L1->die
  // link, 1/2 on each die->package link.
  const Topology t = preset("cloudmatrix384");
  Router router(t);
  EXPECT_TRUE(router.fabric_sprays());
  const NodeId src = t.accelerators()[0], dst = t.accelerators()[8];  // node0.npu0, node1.npu0
  const MultipathRoute r = router.multipath(src, dst, 0, EcmpMode::kFabric);
  ASSERT_TRUE(r.sprayed());
  EXPECT_FALSE(r.key_dependent);  // nothing hashed: one route for every key
  expect_conserved(t, r, src, dst);
  std::map<std::pair<NodeKind, NodeKind>, std::set<double>> by_hop;
  std::size_t up_to_l2 = 0;
  for (const LinkShare& s : r.shares) {
    const NodeKind a = t.kind(t.source(s.link)), b = t.kind(t.target(s.link));
    by_hop[{a, b}].insert(s.share);
    if (t.name(t.target(s.link)).starts_with("l2.")) ++up_to_l2;
  }
  const auto expect_all = [&](NodeKind a, NodeKind b, double share, std::size_t count) {
    const std::set<double>& shares = by_hop.at({a, b});
    for (const double s : shares)
      EXPECT_NEAR(s, share, 1e-15);
    EXPECT_GE(shares.size(), 1u);
    std::size_t links = 0;
    for (const LinkShare& s : r.shares)
      links += t.kind(t.source(s.link)) == a && t.kind(t.target(s.link)) == b ? 1 : 0;
    EXPECT_EQ(links, count);
  };
  expect_all(NodeKind::kAccelerator, NodeKind::kDie, 0.5, 2);
  expect_all(NodeKind::kDie, NodeKind::kSwitch, 1.0 / 14, 14);
  expect_all(NodeKind::kSwitch, NodeKind::kDie, 1.0 / 14, 14);
  expect_all(NodeKind::kDie, NodeKind::kAccelerator, 0.5, 2);
  EXPECT_EQ(up_to_l2, 7u * 16u);  // every L2 chip of every plane
  for (const LinkShare& s : r.shares)
    if (t.name(t.target(s.link)).starts_with("l2.")) {
      EXPECT_NEAR(s.share, 1.0 / 112, 1e-15);
    }
  // The longest path: 6 hops, the 4 UB hops at 200 ns each, package links 0.
  EXPECT_EQ(r.latency, Time::ns(800));
  // Spray mode gives the same route; hash mode one path, chosen per key.
  const MultipathRoute sprayed = router.multipath(src, dst, 0, EcmpMode::kSpray);
  ASSERT_EQ(sprayed.shares.size(), r.shares.size());
  const MultipathRoute hashed = router.multipath(src, dst, 0, EcmpMode::kHash);
  EXPECT_FALSE(hashed.sprayed());
  EXPECT_TRUE(hashed.key_dependent);
  EXPECT_EQ(hashed.path, router.route(src, dst, 0));
}

TEST(Router, HashedLinksKeepHashingInAFabricThatSpraysElsewhere) {
  // Two CloudMatrix384 supernodes: between them traffic leaves through the NPU's RoCE NIC and
  // crosses the RDMA fat-tree, whose links hash (one path per key), while the UB links spray.
  const Topology t = preset("cloudmatrix384:supernodes=2,rdma_radix=16");
  Router router(t);
  const NodeId src = t.accelerators()[0], dst = t.accelerators()[384 + 5];
  std::set<Path> seen;
  for (std::uint64_t key = 0; key < 32; ++key) {
    const MultipathRoute r = router.multipath(src, dst, key, EcmpMode::kFabric);
    EXPECT_FALSE(r.sprayed());
    EXPECT_TRUE(r.key_dependent);
    EXPECT_EQ(r.path, router.route(src, dst, key));
    seen.insert(r.path);
  }
  EXPECT_GT(seen.size(), 1u);
  // A topology map can make them spray: then the route is one sprayed flow, the same for every key.
  const Topology sprayed = from_yaml(
      "{preset: cloudmatrix384, params: {supernodes: 2, rdma_radix: 16}, multipath: {roce: "
      "spray}}");
  Router r2(sprayed);
  const MultipathRoute r = r2.multipath(src, dst, 0, EcmpMode::kFabric);
  EXPECT_TRUE(r.sprayed());
  EXPECT_FALSE(r.key_dependent);
  expect_conserved(sprayed, r, src, dst);
}

TEST(Router, SprayModeSplitsEvenlyAtEveryHopOfAFatTree) {
  // 3-tier radix-4 fat-tree, hosts in different pods: the leaf splits 1/2 over its 2 spines, each
  // spine 1/4 over its 2 cores; shares conserved; the 4 paths of route() all carry traffic.
  const Topology t = preset("fat-tree:tiers=3,radix=4,hosts=16");
  Router router(t);
  const NodeId src = t.accelerators()[0], dst = t.accelerators()[15];
  const MultipathRoute r = router.multipath(src, dst, 0, EcmpMode::kSpray);
  ASSERT_TRUE(r.sprayed());
  expect_conserved(t, r, src, dst);
  std::set<LinkIndex> links;
  for (const LinkShare& s : r.shares)
    links.insert(s.link);
  for (std::uint64_t key = 0; key < 64; ++key)
    for (const LinkIndex l : router.route(src, dst, key))
      EXPECT_TRUE(links.count(l)) << "a hashed path leaves the sprayed set";
  std::multiset<double> shares;
  for (const LinkShare& s : r.shares)
    shares.insert(s.share);
  EXPECT_EQ(shares.count(0.25), 4u + 4u);  // spine -> core and core -> spine
  EXPECT_EQ(shares.count(0.5), 2u + 2u);   // leaf -> spine and spine -> leaf
}

TEST(Router, MultipathSettingNamesAClassTheTopologyHas) {
  try {
    from_yaml("{preset: dgx-h100, multipath: {nvlnk: spray}}");
    FAIL() << "an unknown class must be refused";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no link class 'nvlnk' (did you mean 'nvlink'?)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(from_yaml("{preset: dgx-h100, multipath: {nvlink: adaptive}}"), InputError);
}

TEST(Router, DirectLinkPreferredInAFullMesh) {
  // Four accelerators in a full mesh that also share a switch: the direct link (1 hop) beats the
  // switch (2 hops).
  const Topology t = from_yaml(R"(
nodes:
  - {name: "a{}", kind: accelerator, count: 4, forwards: true}
  - {name: sw, kind: switch}
links:
  - {from: a0, to: a1, bandwidth: 100GB/s, duplex: true}
  - {from: a0, to: a2, bandwidth: 100GB/s, duplex: true}
  - {from: a0, to: a3, bandwidth: 100GB/s, duplex: true}
  - {from: a1, to: a2, bandwidth: 100GB/s, duplex: true}
  - {from: a1, to: a3, bandwidth: 100GB/s, duplex: true}
  - {from: a2, to: a3, bandwidth: 100GB/s, duplex: true}
  - {from: a0, to: sw, bandwidth: 100GB/s, duplex: true}
  - {from: a3, to: sw, bandwidth: 100GB/s, duplex: true}
)");
  Router router(t);
  const Routes r = router.spread(t.accelerators()[0], t.accelerators()[3]);
  EXPECT_EQ(r.equal_cost_paths, 1u);
  ASSERT_EQ(r.paths.at(0).size(), 1u);
  EXPECT_EQ(t.describe(r.paths[0][0]), "a0 -> a3");
}

TEST(Router, AcceleratorsDoNotForwardUnlessTheySay) {
  // a0 - a1 - a2 in a line: a1 does not forward, so there is no route a0 -> a2.
  const std::string line = R"(
nodes:
  - {name: a0, kind: accelerator}
  - {name: a1, kind: accelerator, forwards: FWD}
  - {name: a2, kind: accelerator}
links:
  - {from: a0, to: a1, bandwidth: 1GB/s, duplex: true}
  - {from: a1, to: a2, bandwidth: 1GB/s, duplex: true}
)";
  std::string forwarding = line;
  forwarding.replace(forwarding.find("FWD"), 3, "true");
  const Topology t = from_yaml(forwarding);
  Router router(t);
  EXPECT_EQ(router.route(t.accelerators()[0], t.accelerators()[2]).size(), 2u);
  std::string blocked = line;
  blocked.replace(blocked.find("FWD"), 3, "false");
  EXPECT_THROW(from_yaml(blocked), InputError);  // disconnected accelerators
}

TEST(Router, TrafficInsideAScaleUpDomainStaysThere) {
  // DGX SuperPOD: GPU to GPU of the same node crosses the NVSwitch (2 links); to another node it
  // leaves through the source GPU's NIC on its rail and arrives through the destination's NIC.
  const Topology t = preset("dgx-h100-superpod:nodes=64");
  Router router(t);
  const NodeId g0 = *t.find_node("node0.gpu0");
  const NodeId g3 = *t.find_node("node0.gpu3");
  const Path local = router.route(g0, g3, 7);
  ASSERT_EQ(local.size(), 2u);
  EXPECT_EQ(t.describe(local[0]), "node0.gpu0 -> node0.nvswitch");
  const NodeId far = *t.find_node("node40.gpu0");  // other scalable unit, same rail
  const Routes r = router.spread(g0, far);
  // node0.gpu0 -> nic0 -> leaf0 -> 32 spines -> leaf8 -> node40.nic0 -> node40.gpu0
  EXPECT_EQ(r.equal_cost_paths, 32u);
  for (const Path& p : r.paths) {
    ASSERT_EQ(p.size(), 6u);
    EXPECT_EQ(t.describe(p[0]), "node0.gpu0 -> node0.nic0");
    EXPECT_EQ(t.describe(p[5]), "node40.nic0 -> node40.gpu0");
  }
  const NodeId same_su = *t.find_node("node5.gpu0");  // same rail leaf: no spine
  EXPECT_EQ(router.route(g0, same_su, 1).size(), 4u);
}

TEST(Router, BoundedCacheGivesTheSameRoutes) {
  // A ring of 16 forwarding accelerators; a cache of about one table still routes correctly.
  std::string yaml =
      "nodes:\n  - {name: \"r{}\", kind: accelerator, count: 16, forwards: true}\n"
      "links:\n";
  for (int i = 0; i < 16; ++i) {
    yaml += "  - {from: r" + std::to_string(i) + ", to: r" + std::to_string((i + 1) % 16) +
            ", bandwidth: 1GB/s, duplex: true}\n";
  }
  const Topology t = from_yaml(yaml);
  Router big(t);
  Router tiny(t, RouterOptions{64, 1});
  for (NodeId s : t.accelerators()) {
    for (NodeId d : t.accelerators()) {
      const Routes a = big.spread(s, d);
      EXPECT_EQ(a.paths, tiny.spread(s, d).paths);
      // Opposite points of a 16-ring: 2 paths of 8 hops; otherwise 1 path of min(k, 16-k) hops.
      const std::uint32_t k = (d.value() + 16 - s.value()) % 16;
      EXPECT_EQ(a.equal_cost_paths, k == 8 ? 2u : 1u);
      if (s != d) {
        EXPECT_EQ(a.paths[0].size(), std::min(k, 16 - k));
      }
    }
  }
  EXPECT_GT(tiny.searches(), big.searches());
}

}  // namespace
}  // namespace stepsim::topology
