// Fabrics with parallel planes: how a transfer crosses parallel links is a property of the fabric
// (topology/router.hpp, LinkClass::multipath). CloudMatrix384's UB sprays a transfer over both
// dies and the 7 planes of each; InfiniBand and RoCE hash one path per transfer. Every preset's
// default collectives reach at least half of what its accelerators' links carry.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>

#include "sim/collectives/algorithms/algorithm_registry.hpp"
#include "sim/collectives/runner/collective_session.hpp"
#include "sim/collectives/runner/reachable_bandwidth.hpp"
#include "sim/collectives/runner/traffic.hpp"
#include "test_topologies.hpp"
#include "topology/builder_registry.hpp"

namespace stepsim::collectives {
namespace {

using testing::first_ranks;

constexpr double kGB = 1e9;
constexpr std::int64_t kGiB = std::int64_t{1} << 30;

// Runs `op` of `bytes` with `algorithm` over the first `n` ranks at line rate; returns the time
// and leaves the network's link statistics in `session`.
Time run(CollectiveSession& session, const std::string& algorithm, CollectiveKind kind,
         std::int64_t bytes, std::uint32_t n) {
  const auto registry = builtin_algorithms();
  Operation op;
  op.kind = kind;
  op.size = Bytes(bytes);
  return session.run(*registry.create(algorithm), op,
                     place_group(session.topology(), first_ranks(n)),
                     line_rate_presets().plan_options());
}

TEST(Multipath, ATransferBetweenTwoNpusIsSprayedOverEveryUbLinkOfBothDies) {
  // node0.npu0 -> node1.npu0 on CloudMatrix384 at line rate: the transfer crosses 2 dies x 7 UB
  // links of 28 GB/s each way, so it drains at 392 GB/s; it completes after the longest path's
  // latency (4 UB hops of 200 ns). Closed form: 1 GiB / 392 GB/s + 800 ns. Hashed (the RoCE way)
  // it would take one 28 GB/s link.
  const auto topo = testing::preset("cloudmatrix384");
  const std::vector<TrafficFlow> flow{
      {topo.accelerators()[0], topo.accelerators()[8], Bytes(kGiB), Time::zero()}};
  const TrafficResult sprayed =
      run_traffic(topo, line_rate_presets(), flow, topology::EcmpMode::kFabric, 0.0);
  const double expected_ps = static_cast<double>(kGiB) / (392 * kGB) * 1e12 + 800e3;
  EXPECT_NEAR(static_cast<double>(sprayed.makespan.picoseconds()), expected_ps, 2.0);
  const TrafficResult hashed =
      run_traffic(topo, line_rate_presets(), flow, topology::EcmpMode::kHash, 0.0);
  EXPECT_NEAR(static_cast<double>(hashed.makespan.picoseconds()),
              static_cast<double>(kGiB) / (28 * kGB) * 1e12 + 800e3, 2.0);
}

TEST(Multipath, ACollectiveOnCloudMatrixUsesEveryPlaneEqually) {
  // A ring AllReduce over the 16 NPUs of two nodes: every die of every member sends over all 7 of
  // its UB links, and each of them carries the same bytes (the planes are alike).
  const auto topo = testing::preset("cloudmatrix384");
  CollectiveSession session(topo, line_rate_presets());
  run(session, "ring-fluid", CollectiveKind::kAllReduce, 256 << 20, 16);
  std::map<std::uint32_t, int> planes_used;  // die -> UB links leaving it that carried bytes
  double low = 1e300, high = 0;
  for (std::uint32_t r = 0; r < 16; ++r) {
    for (std::uint32_t v = 0; v < topo.num_nodes(); ++v) {
      const topology::NodeId die(v);
      if (topo.node(die).owner != topo.accelerators()[r]) continue;
      if (topo.kind(die) != topology::NodeKind::kDie) continue;
      const auto range = topo.out_links(die);
      for (std::uint32_t l = range.first; l < range.first + range.count; ++l) {
        if (topo.link_class(topology::LinkIndex(l)).name != "ub") continue;
        const double bytes = session.network().link_statistics(engine::LinkId{l}).bytes_carried;
        if (bytes > 0) ++planes_used[v];
        low = std::min(low, bytes);
        high = std::max(high, bytes);
      }
    }
  }
  ASSERT_EQ(planes_used.size(), 32u);  // 16 NPUs x 2 dies
  for (const auto& [die, planes] : planes_used)
    EXPECT_EQ(planes, 7) << topo.name(topology::NodeId(die));
  EXPECT_GT(low, 0.0);
  EXPECT_NEAR(low, high, 1e-6 * high);
  // The 1 GiB AllReduce over 64 and 384 NPUs with the defaults (calibrated links, auto): at least
  // 80% of the 392 GB/s an NPU's UB links carry.
  for (const std::uint32_t n : {64u, 384u}) {
    CollectiveSession defaults(topo, calibrated_presets());
    Operation op;
    op.kind = CollectiveKind::kAllReduce;
    op.size = Bytes(kGiB);
    const Time t =
        defaults.run(*builtin_algorithms().create("auto"), op, place_group(topo, first_ranks(n)),
                     calibrated_presets().plan_options());
    const double busbw = static_cast<double>(kGiB) / t.seconds() * 2 * (n - 1) / n;
    EXPECT_GE(busbw, 0.8 * 392 * kGB) << n << " ranks";
  }
  // A 64-way AllToAll is bound by the NPUs' UB ports (392 GB/s each way), not by one link: its
  // busbw ((n-1)/n x algbw) is within 5% of them (hashed, it would be near one 28 GB/s link).
  CollectiveSession defaults(topo, calibrated_presets());
  Operation op;
  op.kind = CollectiveKind::kAllToAll;
  op.size = Bytes(kGiB);
  const Time t =
      defaults.run(*builtin_algorithms().create("auto"), op, place_group(topo, first_ranks(64)),
                   calibrated_presets().plan_options());
  EXPECT_GE(static_cast<double>(kGiB) / t.seconds() * 63 / 64, 0.95 * 392 * kGB);
}

TEST(Multipath, HashingStaysWherePresetsHashAndAScenarioCanForceEither) {
  // The InfiniBand fat-tree of a SuperPOD and a plain fat-tree hash: a 16-rank AllToAll gives the
  // same time in fabric and hash modes, to the picosecond (the router's test checks the same of
  // the RoCE plane between CloudMatrix384 supernodes, route by route).
  for (const auto& [name, params] : std::vector<std::pair<std::string, std::string>>{
           {"dgx-h100-superpod", "{nodes: 4}"}, {"fat-tree", "{tiers: 2, radix: 8, hosts: 16}"}}) {
    const auto topo = testing::preset(name, params);
    CollectiveSession fabric(topo, line_rate_presets(), RunnerOptions{topology::EcmpMode::kFabric});
    CollectiveSession hash(topo, line_rate_presets(), RunnerOptions{topology::EcmpMode::kHash});
    EXPECT_EQ(run(fabric, "direct", CollectiveKind::kAllToAll, 64 << 20, 16),
              run(hash, "direct", CollectiveKind::kAllToAll, 64 << 20, 16))
        << name;
  }
  // Forcing hash on CloudMatrix384 brings back one plane per transfer: the ring is then bound by
  // one 28 GB/s link per edge, 14 times slower than sprayed.
  const auto topo = testing::preset("cloudmatrix384");
  CollectiveSession sprayed(topo, line_rate_presets());
  CollectiveSession hashed(topo, line_rate_presets(), RunnerOptions{topology::EcmpMode::kHash});
  const Time a = run(sprayed, "ring-fluid", CollectiveKind::kAllReduce, kGiB, 16);
  const Time b = run(hashed, "ring-fluid", CollectiveKind::kAllReduce, kGiB, 16);
  EXPECT_GT(b.seconds(), 10 * a.seconds());
}

TEST(Multipath, OnAMultiRailFatTreeEveryRailCarriesTheSameShare) {
  // Two DGX H100 nodes of a rail-optimized SuperPOD (8 NICs each, one per rail): a 1 GiB
  // AllReduce over the 16 GPUs (auto) sends the same bytes out of every NIC, one channel per rail.
  const auto topo = testing::preset("dgx-h100-superpod", "{nodes: 2}");
  CollectiveSession session(topo, calibrated_presets());
  run(session, "auto", CollectiveKind::kAllReduce, kGiB, 16);
  std::vector<double> out_of_nic;
  for (std::uint32_t r = 0; r < 16; ++r) {
    const topology::NodeId nic = topo.nics(topo.accelerators()[r])[0].nic;
    const auto range = topo.out_links(nic);
    for (std::uint32_t l = range.first; l < range.first + range.count; ++l) {
      if (topo.target(topology::LinkIndex(l)) == topo.accelerators()[r]) continue;
      out_of_nic.push_back(session.network().link_statistics(engine::LinkId{l}).bytes_carried);
    }
  }
  ASSERT_EQ(out_of_nic.size(), 16u);
  for (const double bytes : out_of_nic) {
    EXPECT_GT(bytes, 0.0);
    EXPECT_NEAR(bytes, out_of_nic[0], 1e-6 * out_of_nic[0]);
  }
}

TEST(Multipath, EveryPresetReachesHalfOfItsBandwidthWithTheDefaults) {
  // stepsim topo's check (reachable_bandwidth.hpp): a 1 GiB AllReduce and AllToAll with the
  // default settings reach at least half of an accelerator's bandwidth in each tier. A preset
  // that routes a sprayed fabric as hashed, or whose algorithms use one plane, fails here.
  const topology::BuilderRegistry registry = topology::BuilderRegistry::with_builtins();
  int presets = 0;
  for (const topology::BuilderEntry* e : registry.entries()) {
    if (e->category != topology::BuilderEntry::Category::kPreset) continue;
    ++presets;
    const auto topo = testing::preset(e->name);
    const std::vector<ReachCheck> checks = check_reachable(topo);
    EXPECT_FALSE(checks.empty()) << e->name;
    for (const ReachCheck& c : checks) {
      EXPECT_TRUE(c.reachable()) << e->name << " " << c.tier << ": allreduce "
                                 << c.allreduce_busbw.value() / kGB << " GB/s, alltoall "
                                 << c.alltoall_busbw.value() / kGB << " GB/s, of "
                                 << c.per_accelerator.value() / kGB << " GB/s";
    }
  }
  EXPECT_GE(presets, 10);
  // The same check catches the defect this guards against: CloudMatrix384 with its UB links
  // hashed per transfer (what the preset did before it declared UB as spraying).
  const auto hashed =
      testing::preset_yaml("{preset: cloudmatrix384, multipath: {ub: hash, on-package: hash}}");
  const std::vector<ReachCheck> checks = check_reachable(hashed);
  ASSERT_FALSE(checks.empty());
  EXPECT_FALSE(checks[0].reachable());
  EXPECT_LT(checks[0].allreduce_busbw.value(), 0.1 * checks[0].per_accelerator.value());
}

TEST(Multipath, KeepingOneLinkOfEachSymmetricGroupChangesNoResult) {
  // CloudMatrix384's 16 L2 chips of a plane are twins (topology/link_symmetry.hpp): the flow
  // network keeps one of their links in its classes (256 links per route between nodes become
  // 46). An AllToAll and a ring AllReduce over 16 NPUs of two nodes, with and without: the same
  // time to the picosecond, and every link carries the same bytes.
  const auto topo = testing::preset("cloudmatrix384");
  for (const auto& [algorithm, kind] : {std::pair{"direct", CollectiveKind::kAllToAll},
                                        std::pair{"ring", CollectiveKind::kAllReduce}}) {
    SCOPED_TRACE(algorithm);
    CollectiveSession grouped(topo, line_rate_presets());
    CollectiveSession every(
        topo, line_rate_presets(),
        RunnerOptions{.ecmp = topology::EcmpMode::kFabric, .link_aliases = false});
    const Time a = run(grouped, algorithm, kind, 48 << 20, 16);
    const Time b = run(every, algorithm, kind, 48 << 20, 16);
    EXPECT_EQ(a, b);
    std::size_t busy = 0;
    for (std::uint32_t l = 0; l < topo.num_links(); ++l) {
      const engine::LinkId id{l};
      ASSERT_EQ(grouped.network().link_statistics(id).bytes_carried,
                every.network().link_statistics(id).bytes_carried)
          << topo.describe(topology::LinkIndex(l));
      busy += every.network().link_statistics(id).bytes_carried > 0 ? 1 : 0;
    }
    // At least the links between the two nodes' L1 chips and the 16 L2 chips of every plane,
    // both ways, carried bytes: 7 x 2 x 16 x 2.
    EXPECT_GE(busy, 448u);
  }
}

}  // namespace
}  // namespace stepsim::collectives
