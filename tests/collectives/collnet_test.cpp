// CollNet (InfiniBand SHARP) and NVLS across domains: the SHARP trees a group gets from the
// fabric, the plans' closed forms on an idle two-level network, and where NCCL's tuner takes them.
// Setup of the closed forms: testing::two_level, D domains of m accelerators on a star (links of
// bandwidth Bi), each accelerator on its own NIC, every NIC on one spine (links of bandwidth Bx),
// every link of latency L; with SHARP the spine reduces, with NVLS every star does. Inside a
// domain a route is 2 links (2L), to the spine 2 links (accelerator -> NIC -> spine).
#include <gtest/gtest.h>

#include <set>

#include "sim/collectives/algorithms/algorithm_registry.hpp"
#include "sim/collectives/algorithms/planned_collective.hpp"
#include "sim/collectives/algorithms/ring_phases.hpp"
#include "sim/collectives/nccl/nccl_tuner.hpp"
#include "sim/collectives/runner/collective_session.hpp"
#include "sim/common/input_error.hpp"
#include "test_topologies.hpp"

namespace stepsim::collectives {
namespace {

const BytesPerSecond kInside = BytesPerSecond::gigabytes(100);
const BytesPerSecond kAcross = BytesPerSecond::gigabytes(25);
const Time kL = Time::ns(100);

Operation allreduce(std::int64_t bytes) {
  Operation op;
  op.kind = CollectiveKind::kAllReduce;
  op.size = Bytes(bytes);
  return op;
}

// No software latency: the closed forms carry the route latencies only.
PlanOptions bare(std::uint32_t max_chunks, Bytes chunk) {
  PlanOptions options;
  options.step_latency = Time::zero();
  options.op_latency = Time::zero();
  options.chunk_size = chunk;
  options.max_chunks = max_chunks;
  return options;
}

double run(const topology::Topology& topo, std::uint32_t ranks, std::string_view algo,
           const Operation& op, const PlanOptions& options) {
  CollectiveSession session(topo, line_rate_presets());
  const Placement placement = place_group(topo, testing::first_ranks(ranks));
  return session.run(*builtin_algorithms().create(algo), op, placement, options).seconds();
}

TEST(SharpTrees, OneTreePerRailRootedWhereEveryNicIsNearest) {
  // Two domains of four on one reducing spine: each rail's tree is the spine alone (a copy per
  // rail), and every member attaches to its rail's copy.
  const auto topo = testing::two_level(2, 4, kInside, kAcross, kL, /*sharp=*/true);
  const Placement placement = place_group(topo, testing::first_ranks(8));
  ASSERT_TRUE(placement.network_tree.has_value());
  const NetworkTree& tree = *placement.network_tree;
  ASSERT_EQ(tree.switches(), 4u);
  for (std::uint32_t s = 0; s < 4; ++s) {
    EXPECT_EQ(tree.switch_parent[s], NetworkTree::kNone);
    EXPECT_EQ(topo.name(placement.network_switches[s]), "spine");
  }
  for (std::uint32_t i = 0; i < 8; ++i)
    EXPECT_EQ(tree.member_switch[i], tree.member_switch[i % 4]) << "member " << i;
  EXPECT_TRUE(group_shape(topo, placement).network_tree.has_value());
  // Without SHARP, inside one domain, or for a pair the executor places: no tree.
  const auto plain = testing::two_level(2, 4, kInside, kAcross, kL);
  EXPECT_FALSE(place_group(plain, testing::first_ranks(8)).network_tree.has_value());
  EXPECT_FALSE(place_group(topo, testing::first_ranks(4)).network_tree.has_value());
  EXPECT_FALSE(place_group(topo, std::vector<std::uint32_t>{0, 4}, {.network_trees = false})
                   .network_tree.has_value());
}

TEST(SharpTrees, RailsOfAFatTreeClimbToTheLowestCommonLevel) {
  // DGX SuperPOD with SHARP: 64-port leaves take 32 nodes' NICs of a rail. On 4 nodes each rail's
  // NICs share their rail leaf, the root; on 40 nodes a rail spans two leaves joined at a spine.
  for (const auto& [nodes, switches_per_rail] : {std::pair{4, 1u}, std::pair{40, 3u}}) {
    const auto topo =
        testing::preset("dgx-h100-superpod", "{nodes: " + std::to_string(nodes) + ", sharp: true}");
    const std::uint32_t n = static_cast<std::uint32_t>(nodes) * 8;
    const Placement placement = place_group(topo, testing::first_ranks(n));
    ASSERT_TRUE(placement.network_tree.has_value()) << nodes << " nodes";
    const NetworkTree& tree = *placement.network_tree;
    EXPECT_EQ(tree.switches(), 8 * switches_per_rail) << nodes << " nodes";
    std::set<std::uint32_t> roots;
    for (std::uint32_t i = 0; i < n; ++i) {
      std::uint32_t s = tree.member_switch[i], hops = 0;
      // The attachment is the switch the member's NIC is wired to.
      const topology::NodeId nic = topo.nics(placement.members[i]).front().nic;
      bool wired = false;
      const auto links = topo.out_links(nic);
      for (std::uint32_t l = links.first; l < links.first + links.count; ++l)
        wired = wired || topo.target(topology::LinkIndex(l)) == placement.network_switches[s];
      EXPECT_TRUE(wired) << "member " << i;
      while (tree.switch_parent[s] != NetworkTree::kNone) {
        s = tree.switch_parent[s];
        ++hops;
      }
      EXPECT_EQ(hops, switches_per_rail == 1 ? 0u : 1u);
      roots.insert(s);
    }
    EXPECT_EQ(roots.size(), 8u) << "one root per rail";
  }
  const auto plain = testing::preset("dgx-h100-superpod", "{nodes: 4}");
  EXPECT_FALSE(place_group(plain, testing::first_ranks(32)).network_tree.has_value());
}

TEST(CollNetClosedForm, OneChunkOnIdleTwoLevel) {
  // One chunk, D = 2 domains of m = 4: a reduce-scatter inside ((m-1)/m·S out of each member over
  // its star link, route 2L), the share up to the spine and back (S/m each way over the NIC's
  // links, 2L each), an all-gather inside ((m-1)/m·S, 2L):
  //   T = 2(m-1)/m·S/Bi + 2·S/(m·Bx) + 8L.
  const double m = 4;
  const auto topo = testing::two_level(2, 4, kInside, kAcross, kL, true);
  const std::int64_t bytes = 64 << 20;
  const double S = static_cast<double>(bytes);
  const double expected =
      2 * (m - 1) / m * S / kInside.value() + 2 * S / (m * kAcross.value()) + 8 * kL.seconds();
  EXPECT_NEAR(run(topo, 8, "collnet", allreduce(bytes), bare(1, Bytes(bytes))), expected,
              1e-9 * expected);
  // NVLS inside the domains: each member streams S up its star link and gets S/m back, sends S/m
  // up and gets S back (the multicast's route counts twice), every star link carrying one stream:
  //   T = 2·S/Bi + 2·S/(m·Bi) + 2·S/(m·Bx) + 9L.
  const auto nvls = testing::two_level(2, 4, kInside, kAcross, kL, true, true);
  const double expected_nvls = 2 * S / kInside.value() + 2 * S / (m * kInside.value()) +
                               2 * S / (m * kAcross.value()) + 9 * kL.seconds();
  EXPECT_NEAR(run(nvls, 8, "nvls-collnet", allreduce(bytes), bare(1, Bytes(bytes))), expected_nvls,
              1e-9 * expected_nvls);
}

TEST(CollNetClosedForm, PipelinedChunksRunAtTheBottleneck) {
  // 64 chunks: the phases overlap, and the time approaches the busiest link's load over its
  // bandwidth, plus the pipeline's fill (about three chunks' phases). Star links bound when the
  // NICs are fast: 2(m-1)/m·S over Bi (the reduce-scatter and the all-gather both leave a member
  // on its star link); the NICs bound when they are slow: S/m over Bx each way.
  const double m = 4;
  const std::int64_t bytes = 256 << 20;
  const double S = static_cast<double>(bytes);
  const auto options = bare(64, Bytes(bytes / 4 / 64));
  const auto fast_nics =
      testing::two_level(2, 4, kInside, BytesPerSecond::gigabytes(400), kL, true);
  const double star_bound = 2 * (m - 1) / m * S / kInside.value();
  const double t1 = run(fast_nics, 8, "collnet", allreduce(bytes), options);
  EXPECT_GT(t1, star_bound);
  EXPECT_LT(t1, star_bound * (1 + 4.0 / 64));
  const auto slow_nics = testing::two_level(2, 4, BytesPerSecond::gigabytes(1000),
                                            BytesPerSecond::gigabytes(10), kL, true);
  const double nic_bound = S / (m * 10e9);
  const double t2 = run(slow_nics, 8, "collnet", allreduce(bytes), options);
  EXPECT_GT(t2, nic_bound);
  EXPECT_LT(t2, nic_bound * (1 + 4.0 / 64));
  // Against NCCL's flat rings on the same slow NICs, one per rail (m channels), whose edges
  // between the domains carry 2(n-1)/n·S/m through each NIC: SHARP's gain is 2(n-1)/n = 1.75 for
  // n = 8 (within the fill).
  const double ring = run(slow_nics, 8, "ring-fluid", allreduce(bytes), options);
  EXPECT_NEAR(ring / t2, 2.0 * 7 / 8, 0.1);
}

TEST(CollNet, UnsupportedWhereTheFabricDoesNotReduce) {
  const auto registry = builtin_algorithms();
  const auto collnet = registry.create("collnet");
  const auto plain = testing::two_level(2, 4, kInside, kAcross, kL);
  const GroupShape shape = group_shape(plain, place_group(plain, testing::first_ranks(8)));
  ASSERT_TRUE(collnet->unsupported(allreduce(1 << 20), shape).has_value());
  EXPECT_NE(collnet->unsupported(allreduce(1 << 20), shape)->find("sharp=true"), std::string::npos);
  EXPECT_THROW(collnet->plan(allreduce(1 << 20), shape, PlanOptions{}), InputError);
  // NVLS across domains needs reducing stars as well as the spine.
  const auto sharp = testing::two_level(2, 4, kInside, kAcross, kL, true);
  const GroupShape no_nvls = group_shape(sharp, place_group(sharp, testing::first_ranks(8)));
  EXPECT_FALSE(collnet->unsupported(allreduce(1 << 20), no_nvls).has_value());
  EXPECT_TRUE(registry.create("nvls-collnet")->unsupported(allreduce(1 << 20), no_nvls));
  // Members of the two domains on different rails: the trees would reduce different shares.
  const Placement crossed = place_group(sharp, std::vector<std::uint32_t>{0, 1, 6, 7});
  EXPECT_TRUE(collnet->unsupported(allreduce(1 << 20), group_shape(sharp, crossed)));
}

TEST(NcclTuner, TakesNvlsWithSharpAcrossNodesWhereTheFabricReduces) {
  // DGX H100 nodes on a SHARP fat-tree: NCCL's multi-node NVLS (bus min(NVLink, NICs) x 5/6)
  // beats the ring and the trees at 1 GiB; without SHARP the choice has no CollNet. On A100
  // (no NVLS) with SHARP NCCL's CollNet-Direct model (bus x 1/2: its x 0.85 is for Hopper only,
  // minCompCap >= 90) has the ring's bandwidth without its 2(n-1) step latencies, so it wins on
  // mid sizes and at 1 GiB alike.
  const auto algo = builtin_algorithms().create("auto");
  PlanOptions options;
  options.protocol = ProtocolChoice::kAuto;
  const auto sharp = testing::preset("dgx-h100-superpod", "{nodes: 4, sharp: true}");
  const GroupShape h100 = group_shape(sharp, place_group(sharp, testing::first_ranks(32)));
  EXPECT_EQ(plan_collective(*algo, allreduce(std::int64_t{1} << 30), h100, options).label,
            "nvls-collnet/Simple");
  const auto plain = testing::preset("dgx-h100-superpod", "{nodes: 4}");
  const GroupShape h100_plain = group_shape(plain, place_group(plain, testing::first_ranks(32)));
  const std::string label =
      plan_collective(*algo, allreduce(std::int64_t{1} << 30), h100_plain, options).label;
  EXPECT_EQ(label.find("collnet"), std::string::npos) << label;
  const auto selene = testing::preset("selene", "{nodes: 4, sharp: true}");
  const GroupShape a100 = group_shape(selene, place_group(selene, testing::first_ranks(32)));
  EXPECT_EQ(plan_collective(*algo, allreduce(16 << 20), a100, options).label, "collnet/Simple");
  EXPECT_EQ(plan_collective(*algo, allreduce(std::int64_t{1} << 30), a100, options).label,
            "collnet/Simple");
}

TEST(NvlsCollNet, SwitchPhasesCarryTheNvlsStepCostAndTheSharpTreeDoesNot) {
  // DGX H100 nodes on a SHARP fat-tree, 4 x 8, 1 GiB with the protocol model: a member sends S up
  // to its NVSwitch (reduce-scatter) and S/8 (all-gather), in NVLS steps of NCCL's chunk (K = 16 x
  // 8 chunks at once: 128 KiB from 64 x K x 128 KiB = 1 GiB up), and S/8 to the SHARP tree. With
  // the step cost o, the switch phases grow by (S + S/8) x o / 128 KiB; the tree's share does not.
  const auto sharp = testing::preset("dgx-h100-superpod", "{nodes: 4, sharp: true}");
  const GroupShape shape = group_shape(sharp, place_group(sharp, testing::first_ranks(32)));
  const auto algo = builtin_algorithms().create("nvls-collnet");
  PlanOptions options;
  options.protocol = ProtocolChoice::kSimple;
  const std::int64_t bytes = std::int64_t{1} << 30;
  const auto sent = [&](Bytes overhead) {
    options.nvls_step_overhead = overhead;
    return plan_collective(*algo, allreduce(bytes), shape, options)
        .plan.bytes_sent(shape.size)[0]
        .as_double();
  };
  const double s = static_cast<double>(bytes);
  EXPECT_NEAR(sent(Bytes(11000)) - sent(Bytes(0)), s * 9 / 8 * 11000.0 / 131072.0, 1024.0);
  EXPECT_EQ(detail::nvls_chunk_bytes(bytes, 16 * 8), 128 << 10);
}

TEST(CollNetChainClosedForm, OnePieceOnIdleTwoLevel) {
  // One piece, D = 2 domains of m = 4, chain k headed by local member k: every member sends one
  // share (S/m) up each of the m-1 hops in turn (at each hop every member sends one share and
  // receives one, over its star link, route 2L), each head its share up to the spine and back
  // (S/m each way over the NIC's links, 2L each), then the m-1 hops down:
  //   T = 2(m-1)·S/(m·Bi) + 2·S/(m·Bx) + 4m·L
  // (the bandwidth terms of CollNet-Direct; the chain is deeper: 2(m-1) hops inside, not 2).
  const double m = 4;
  const auto topo = testing::two_level(2, 4, kInside, kAcross, kL, true);
  const std::int64_t bytes = 64 << 20;
  const double S = static_cast<double>(bytes);
  const double expected = 2 * (m - 1) * S / (m * kInside.value()) + 2 * S / (m * kAcross.value()) +
                          4 * m * kL.seconds();
  EXPECT_NEAR(run(topo, 8, "collnet-chain", allreduce(bytes), bare(1, Bytes(bytes))), expected,
              1e-9 * expected);
}

TEST(CollNetChainClosedForm, PipelinedChainsRunAtTheBottleneckAndPayTheirDepthOnce) {
  // Chunks of 1/64 of a chain's share: the first chunk hop by hop, the middle fluid, the last
  // chunk hop by hop. The time approaches the busiest link's load over its bandwidth, as
  // CollNet-Direct's: 2(m-1)/m·S over Bi on the star links when the NICs are fast, S/m over Bx
  // through each NIC when they are slow.
  const double m = 4;
  const std::int64_t bytes = 256 << 20;
  const double S = static_cast<double>(bytes);
  auto options = bare(64, Bytes(bytes / 4 / 64));
  const auto fast_nics =
      testing::two_level(2, 4, kInside, BytesPerSecond::gigabytes(400), kL, true);
  const double star_bound = 2 * (m - 1) / m * S / kInside.value();
  const double t1 = run(fast_nics, 8, "collnet-chain", allreduce(bytes), options);
  EXPECT_GT(t1, star_bound);
  EXPECT_LT(t1, star_bound * (1 + 4.0 / 64));
  const auto slow_nics = testing::two_level(2, 4, BytesPerSecond::gigabytes(1000),
                                            BytesPerSecond::gigabytes(10), kL, true);
  const double nic_bound = S / (m * 10e9);
  const double t2 = run(slow_nics, 8, "collnet-chain", allreduce(bytes), options);
  EXPECT_GT(t2, nic_bound);
  EXPECT_LT(t2, nic_bound * (1 + 4.0 / 64));
  // NCCL's step latencies (a per scale-up hop, a_net per network step) go on the last chunk, the
  // pipeline's drain: the chain pays its depth once, 2(m-1)·a + a_net, as NCCL's model of
  // CollNetChain says (tuning.cc).
  const Time a = Time::ns(2800), a_net = Time::us(30);
  options.step_latency = a;
  options.net_step_latency = a_net;
  const double depth = 2 * (m - 1) * a.seconds() + a_net.seconds();
  EXPECT_NEAR(run(fast_nics, 8, "collnet-chain", allreduce(bytes), options) - t1, depth,
              1e-6 * depth);
}

TEST(CollNetChain, RunsWhereCollNetDoesAndTheTunerModelsIt) {
  const auto registry = builtin_algorithms();
  const auto chain = registry.create("collnet-chain");
  const auto plain = testing::two_level(2, 4, kInside, kAcross, kL);
  const GroupShape shape = group_shape(plain, place_group(plain, testing::first_ranks(8)));
  ASSERT_TRUE(chain->unsupported(allreduce(1 << 20), shape).has_value());
  EXPECT_THROW(chain->plan(allreduce(1 << 20), shape, PlanOptions{}), InputError);
  // NCCL's CollNetChain (CoreWeave's SHARP run forced it): Simple only, the chain's latency
  // 2(m-1) x 2.8 us inside and one network step of 30 us (tuning.cc, NCCL 2.20.3).
  const auto sharp = testing::preset("dgx-h100-superpod", "{nodes: 12, sharp: true}");
  const GroupShape h100 = group_shape(sharp, place_group(sharp, testing::first_ranks(96)));
  PlanOptions options;
  options.protocol = ProtocolChoice::kAuto;
  const auto planned = plan_collective(*chain, allreduce(512 << 20), h100, options);
  EXPECT_EQ(planned.label, "collnet-chain/Simple");
  EXPECT_FALSE(
      nccl_predicted_time_us(allreduce(1 << 20), h100, NcclAlgorithm::kCollNetChain, Protocol::kLL)
          .has_value());
  // Latency alone: the model's time at 0 bytes.
  EXPECT_NEAR(
      *nccl_predicted_time_us(allreduce(0), h100, NcclAlgorithm::kCollNetChain, Protocol::kSimple),
      2 * 7 * 2.8 + 30, 1e-9);
}

}  // namespace
}  // namespace stepsim::collectives
