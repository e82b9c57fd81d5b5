// NCCL's bandwidth ceilings beyond the links (nccl_algorithm_ceiling) and how the flow simulation
// holds a member's sends to them (Plan::send_ceilings, the runner's ceiling links). Constants from
// NCCL v2.20.3 src/graph/tuning.cc: llMaxBws, perChMaxRingLL128Bws, perChMaxTreeBws,
// perChMaxTreeLL128Bws, treeCorrectionFactor; src/graph/topo.h: SM80/SM90_NVLINK_BW.
#include <gtest/gtest.h>

#include "sim/collectives/algorithms/algorithm_registry.hpp"
#include "sim/collectives/algorithms/planned_collective.hpp"
#include "sim/collectives/nccl/nccl_tuner.hpp"
#include "sim/collectives/runner/collective_runner.hpp"
#include "test_topologies.hpp"

namespace stepsim::collectives {
namespace {

Operation allreduce(std::int64_t bytes) {
  Operation op;
  op.kind = CollectiveKind::kAllReduce;
  op.size = Bytes(bytes);
  return op;
}

GroupShape superpod(std::uint32_t nodes) {
  const auto topo = testing::preset("dgx-h100-superpod", "{nodes: " + std::to_string(nodes) + "}");
  return group_shape(topo, place_group(topo, testing::first_ranks(8 * nodes)));
}

double ceiling_gbps(const Operation& op, const GroupShape& g, NcclAlgorithm a, Protocol p) {
  const auto c = nccl_algorithm_ceiling(op, g, a, p);
  return c ? c->gigabytes_per_second() : -1.0;
}

TEST(NcclCeiling, PerChannelCapsOfHopperAcrossNodes) {
  // DGX H100 nodes: 8 NICs of 400G (one graph channel each), NVLink4 450 GB/s counted by NCCL as
  // 18 x 20.6 = 370.8. Results are algorithm bandwidths (busBw x NCCL's ratio).
  const GroupShape two = superpod(2);
  ASSERT_TRUE(two.domain_in_switch);
  const Operation big = allreduce(std::int64_t{1} << 30);
  // Ring LL128 across nodes: 8 channels x 36.7 GB/s; ratio n / 2(n-1) = 16/30.
  EXPECT_NEAR(ceiling_gbps(big, two, NcclAlgorithm::kRing, Protocol::kLL128), 8 * 36.7 * 16 / 30,
              1e-9);
  // Ring LL: min(llMaxBw on 2 nodes of Intel hosts 39.0, bw/4), bw = min(370.8, 8 x 50) / 4.
  EXPECT_NEAR(ceiling_gbps(big, two, NcclAlgorithm::kRing, Protocol::kLL), 39.0 * 16 / 30, 1e-9);
  // Simple rings, NVLS-tree: no ceiling beyond the links.
  EXPECT_LT(ceiling_gbps(big, two, NcclAlgorithm::kRing, Protocol::kSimple), 0);
  EXPECT_LT(ceiling_gbps(big, two, NcclAlgorithm::kNvlsTree, Protocol::kSimple), 0);
  // Tree LL128 on 8 nodes at 16 MiB: min(370.8 x 0.92, 8 x 36.0) = 288, x 120/128 = 270,
  // min(270, 8 x 29.0) = 232, x the correction 0.9 for 16 MiB (log2(2^24 / 64) = 18); ratio 0.5.
  const GroupShape eight = superpod(8);
  EXPECT_NEAR(ceiling_gbps(allreduce(16 << 20), eight, NcclAlgorithm::kTree, Protocol::kLL128),
              232 * 0.9 * 0.5, 1e-9);
  // Tree Simple on 8 nodes at 1 GiB (correction 1.0 past 256 MiB): min(341.1, 288) = 288.
  EXPECT_NEAR(ceiling_gbps(big, eight, NcclAlgorithm::kTree, Protocol::kSimple), 288 * 0.5, 1e-9);
  // One GPU per node (GPU 0 of 4 nodes): how many channels share its NIC is unknown, so no
  // per-channel ceiling; LL's stays (min(20.4 on 4+ nodes, 50/4), ratio 4/6).
  const auto topo = testing::preset("dgx-h100-superpod", "{nodes: 4}");
  const std::vector<std::uint32_t> first_gpus{0, 8, 16, 24};
  const GroupShape ppn1 = group_shape(topo, place_group(topo, first_gpus));
  ASSERT_EQ(ppn1.num_domains(), 4u);
  EXPECT_LT(ceiling_gbps(big, ppn1, NcclAlgorithm::kRing, Protocol::kLL128), 0);
  EXPECT_NEAR(ceiling_gbps(big, ppn1, NcclAlgorithm::kRing, Protocol::kLL), 12.5 * 4 / 6, 1e-9);
}

TEST(NcclCeiling, OneNodeLLIsAQuarterOfNcclsNVLinkFigure) {
  // One DGX A100: NCCL counts its 12 NVLinks at 20 GB/s (240 against 300 at line rate); LL's
  // busBw is min(87.7, 240/4) = 60 GB/s on AllReduce, 240/3 = 80 capped at 87.7 on AllGather.
  const auto topo = testing::preset("dgx-a100");
  const GroupShape g = group_shape(topo, place_group(topo, testing::first_ranks(8)));
  EXPECT_NEAR(ceiling_gbps(allreduce(1 << 20), g, NcclAlgorithm::kRing, Protocol::kLL),
              60.0 * 8 / 14, 1e-9);
  Operation ag = allreduce(1 << 20);
  ag.kind = CollectiveKind::kAllGather;
  EXPECT_NEAR(ceiling_gbps(ag, g, NcclAlgorithm::kRing, Protocol::kLL), 80.0 * 8 / 7, 1e-9);
  // LL128 on one node: NCCL's 12 channels x 20 GB/s sit above the links: no ceiling.
  EXPECT_LT(ceiling_gbps(allreduce(4 << 20), g, NcclAlgorithm::kRing, Protocol::kLL128), 0);
  // A group whose bandwidths are unknown gets none (the tuner's stand-ins are no bound).
  GroupShape unknown = GroupShape::single_domain(8, false);
  EXPECT_LT(ceiling_gbps(allreduce(1 << 20), unknown, NcclAlgorithm::kRing, Protocol::kLL), 0);
}

TEST(NcclCeiling, PlanHoldsEachMemberToItsShareOfTheTime) {
  // A ring member sends 2(n-1)/n x S and is held to busBw; on a tree every member's ceiling is
  // its bytes over the time S / algBw, so all members' bandwidth terms end together.
  const auto topo = testing::preset("dgx-a100");
  const Placement placement = place_group(topo, testing::first_ranks(8));
  const GroupShape g = group_shape(topo, placement);
  PlanOptions options;
  options.protocol = ProtocolChoice::kLL;
  const auto planned =
      plan_collective(*builtin_algorithms().create("ring"), allreduce(1 << 20), g, options);
  ASSERT_EQ(planned.plan.send_ceilings().size(), 8u);
  for (const BytesPerSecond c : planned.plan.send_ceilings())
    EXPECT_NEAR(c.gigabytes_per_second(), 60.0, 1e-9);
  options.protocol = ProtocolChoice::kSimple;
  EXPECT_TRUE(plan_collective(*builtin_algorithms().create("ring"), allreduce(1 << 20), g, options)
                  .plan.send_ceilings()
                  .empty());
}

// Runs `count` copies of the same LL AllReduce plan at once on the star; returns when the last
// ended.
Time concurrent_runs(const topology::Topology& topo, int count, Bytes size) {
  engine::Simulator sim;
  auto network = std::make_unique<engine::FlowNetwork>(sim);
  topology::Router router(topo);
  const NetworkLinks links = add_topology_links(*network, topo, line_rate_presets());
  auto runner = std::make_unique<CollectiveRunner>(sim, *network, topo, router, links);
  const Placement placement = place_group(topo, testing::first_ranks(8));
  PlanOptions options;
  options.protocol = ProtocolChoice::kLL;
  const auto plan = std::make_shared<const Plan>(
      plan_collective(*builtin_algorithms().create("ring-fluid"), allreduce(size.count()),
                      group_shape(topo, placement), options)
          .plan);
  Time last;
  int done = 0;
  for (int i = 0; i < count; ++i)
    runner->start(plan, placement, [&](Time t) {
      last = std::max(last, t);
      ++done;
    });
  sim.run();
  EXPECT_EQ(done, count);
  runner.reset();
  network.reset();
  return last;
}

TEST(NcclCeiling, EveryRunHasItsOwnAndLeavesTheRestOfTheLink) {
  // Star of 8 at 100 GB/s: NCCL's LL ceiling is min(87.7, 80/4) = 20 GB/s of payload, 40 GB/s on
  // the wire, per member and run. Two runs at once fit the links (80 of 100 GB/s) and end as one
  // alone does; three do not (120): each gets a third of the link, 100/3/2 GB/s of payload.
  const BytesPerSecond b = BytesPerSecond::gigabytes(100);
  const auto topo = testing::star(8, b, Time::ns(100));
  const Bytes size(64 << 20);
  const Time one = concurrent_runs(topo, 1, size);
  EXPECT_EQ(concurrent_runs(topo, 2, size), one);
  const double bytes_sent = 2.0 * 7 / 8 * size.as_double();
  const double alone_bw = bytes_sent / 20e9, shared_bw = bytes_sent / (100e9 / 3 / 2);
  EXPECT_NEAR(concurrent_runs(topo, 3, size).seconds(), one.seconds() - alone_bw + shared_bw,
              1e-6 * one.seconds());
}

}  // namespace
}  // namespace stepsim::collectives
