// NCCL's point-to-point channels (nccl_p2p.hpp): how many channels a transfer to one peer gets,
// what they carry, and the flow simulation holding each transfer inside a scale-up domain to them.
#include <gtest/gtest.h>

#include <memory>

#include "sim/collectives/algorithms/algorithm_registry.hpp"
#include "sim/collectives/algorithms/planned_collective.hpp"
#include "sim/collectives/nccl/nccl_p2p.hpp"
#include "sim/collectives/runner/collective_runner.hpp"
#include "sim/collectives/runner/link_calibration.hpp"
#include "test_topologies.hpp"

namespace stepsim::collectives {
namespace {

constexpr std::int64_t kMiB = 1 << 20;

GroupShape preset_group(const std::string& name, const std::string& options, std::uint32_t ranks) {
  const auto topo = testing::preset(name, options);
  return group_shape(topo, place_group(topo, testing::first_ranks(ranks)));
}

TEST(NcclP2p, ChannelsOfOneDgxH100AndOneH800Node) {
  // DGX H100: 18 NVLinks, 2 channels each to a peer (36), at most MAXCHANNELS 32: 32 p2p
  // channels, 32 per peer; 8 ranks start on 32 / 8 = 4. Chunk 512 KiB (NVLink, one node): parts
  // of 64 KiB to 16 MiB.
  const auto h100 = nccl_p2p_model(preset_group("dgx-h100", "", 8));
  ASSERT_TRUE(h100);
  EXPECT_EQ(h100->channels, 32u);
  EXPECT_EQ(h100->channels_per_peer, 32u);
  EXPECT_FALSE(h100->multi_node);
  EXPECT_EQ(h100->chunk, Bytes(512 << 10));
  EXPECT_DOUBLE_EQ(h100->channel_bandwidth.gigabytes_per_second(), 20.6);
  // The steps of the published sendrecv curve (32 MiB to 512 MiB: 4, 4, 8, 16, 32 channels).
  EXPECT_EQ(nccl_p2p_peer_channels(*h100, 32 * kMiB), 4u);
  EXPECT_EQ(nccl_p2p_peer_channels(*h100, 64 * kMiB), 4u);
  EXPECT_EQ(nccl_p2p_peer_channels(*h100, 128 * kMiB), 8u);
  EXPECT_EQ(nccl_p2p_peer_channels(*h100, 256 * kMiB), 16u);
  EXPECT_EQ(nccl_p2p_peer_channels(*h100, 512 * kMiB), 32u);
  EXPECT_EQ(nccl_p2p_peer_channels(*h100, std::int64_t{16} << 30), 32u);
  // Small transfers: one channel per 64 KiB part, at most the 4 a peer starts on.
  EXPECT_EQ(nccl_p2p_peer_channels(*h100, 1), 1u);
  EXPECT_EQ(nccl_p2p_peer_channels(*h100, 64 << 10), 1u);
  EXPECT_EQ(nccl_p2p_peer_channels(*h100, (64 << 10) + 1), 2u);
  EXPECT_EQ(nccl_p2p_peer_channels(*h100, 4 * kMiB), 4u);
  // H800: 8 NVLinks, "16 coll channels, 16 p2p channels, 16 p2p channels per peer" (NCCL's log,
  // NVIDIA/nccl #892); 8 ranks start on 2.
  GroupShape h800_node = GroupShape::single_domain(8, /*in_switch=*/true);
  h800_node.scale_up_bandwidth = BytesPerSecond::gigabytes(200);  // 8 NVLink4 links
  const auto h800 = nccl_p2p_model(h800_node);
  ASSERT_TRUE(h800);
  EXPECT_EQ(h800->channels, 16u);
  EXPECT_EQ(h800->channels_per_peer, 16u);
  EXPECT_EQ(nccl_p2p_peer_channels(*h800, 32 * kMiB), 2u);
  EXPECT_EQ(nccl_p2p_peer_channels(*h800, 64 * kMiB), 4u);
  // A DGX A100 (12 NVLinks: 24 channels, 32 p2p channels) counts an NVLink at 20.0 GB/s.
  const auto a100 = nccl_p2p_model(preset_group("dgx-a100", "", 8));
  ASSERT_TRUE(a100);
  EXPECT_EQ(a100->channels, 32u);
  EXPECT_DOUBLE_EQ(a100->channel_bandwidth.gigabytes_per_second(), 20.0);
  // A DGX B200 (18 NVLink5 links of 50 GB/s) at NCCL's 40.1 GB/s a link.
  const auto b200 = nccl_p2p_model(preset_group("dgx-b200", "", 8));
  ASSERT_TRUE(b200);
  EXPECT_EQ(b200->channels, 32u);
  EXPECT_DOUBLE_EQ(b200->channel_bandwidth.gigabytes_per_second(), 40.1);
}

TEST(NcclP2p, AcrossNodesTwoChannelsPerPeerAndNetworkChunks) {
  // NCCL_NCHANNELS_PER_NET_PEER 2 ("2 p2p channels per peer" on two H20 nodes, NVIDIA/nccl
  // #1189); chunk 128 KiB (NCCL_P2P_NET_CHUNKSIZE); parts of 64 KiB to 128 KiB. 16 ranks start
  // on 2 (2 x 16 = 32), 80 on 1.
  const auto two = nccl_p2p_model(preset_group("dgx-h100-superpod", "{nodes: 2}", 16));
  ASSERT_TRUE(two);
  EXPECT_TRUE(two->multi_node);
  EXPECT_EQ(two->channels_per_peer, 2u);
  EXPECT_EQ(two->chunk, Bytes(128 << 10));
  EXPECT_EQ(nccl_p2p_peer_channels(*two, 64 << 10), 1u);
  EXPECT_EQ(nccl_p2p_peer_channels(*two, 4 * kMiB), 2u);
  const auto ten = nccl_p2p_model(preset_group("dgx-h100-superpod", "{nodes: 10}", 80));
  ASSERT_TRUE(ten);
  EXPECT_EQ(nccl_p2p_peer_channels(*ten, 100 << 10), 1u);  // one part of 100 KiB fits 128 KiB
  EXPECT_EQ(nccl_p2p_peer_channels(*ten, 4 * kMiB), 2u);
}

TEST(NcclP2p, NoModelWithoutAScaleUpDomainOrNccl) {
  // One GPU per node: no NVLink peer.
  const auto topo = testing::preset("dgx-h100-superpod", "{nodes: 4}");
  const std::vector<std::uint32_t> first_gpus{0, 8, 16, 24};
  EXPECT_FALSE(nccl_p2p_model(group_shape(topo, place_group(topo, first_gpus))));
  GroupShape hccl = preset_group("dgx-h100", "", 8);
  hccl.nccl = false;
  EXPECT_FALSE(nccl_p2p_model(hccl));
}

TEST(NcclP2p, LimitIsTheChannelsRateAndOneChunksFill) {
  const auto h100 = nccl_p2p_model(preset_group("dgx-h100", "", 8));
  ASSERT_TRUE(h100);
  const NcclP2pLimit big = nccl_p2p_limit(*h100, 32 * kMiB);
  EXPECT_DOUBLE_EQ(big.ceiling.gigabytes_per_second(), 4 * 20.6);
  EXPECT_NEAR(big.fill.seconds(), (512 << 10) / 20.6e9, 1e-12);
  // A part smaller than the chunk fills with the part.
  const NcclP2pLimit small = nccl_p2p_limit(*h100, 100 << 10);
  EXPECT_DOUBLE_EQ(small.ceiling.gigabytes_per_second(), 2 * 20.6);
  EXPECT_NEAR(small.fill.seconds(), (50 << 10) / 20.6e9, 1e-12);
}

// Runs `plan` on an idle DGX H100 at line rate (450 GB/s NVLink per GPU, no calibration), the
// group its first 8 GPUs; returns when it ended.
Time run_on_dgx_h100(const Plan& plan, const topology::Topology& topo) {
  engine::Simulator sim;
  auto network = std::make_unique<engine::FlowNetwork>(sim);
  topology::Router router(topo);
  const NetworkLinks links = add_topology_links(*network, topo, line_rate_presets());
  auto runner = std::make_unique<CollectiveRunner>(sim, *network, topo, router, links);
  Time end;
  runner->start(std::make_shared<const Plan>(plan), place_group(topo, testing::first_ranks(8)),
                [&](Time t) { end = t; });
  sim.run();
  runner.reset();
  network.reset();
  return end;
}

TEST(NcclP2p, SendRecvInsideANodeRunsAtItsChannelsRate) {
  // One pair, 32 MiB on Simple: 4 channels of 20.6 GB/s (82.4 GB/s, under the 450 GB/s NVLinks),
  // plus one 512 KiB chunk's fill; the same plan without NCCL's model runs at the NVLinks' rate.
  const auto topo = testing::preset("dgx-h100", "");
  const GroupShape g = group_shape(topo, place_group(topo, testing::first_ranks(8)));
  Operation op;
  op.kind = CollectiveKind::kSendRecv;
  op.size = Bytes(32 * kMiB);
  PlanOptions options;
  options.protocol = ProtocolChoice::kAuto;
  const auto direct = builtin_algorithms().create("direct");
  const PlannedCollective nccl = plan_collective(*direct, op, g, options);
  EXPECT_EQ(nccl.label, "direct/Simple");
  ASSERT_EQ(nccl.plan.size(), 1u);
  EXPECT_DOUBLE_EQ(nccl.plan.transfer(TransferId(0)).rate_ceiling.gigabytes_per_second(), 4 * 20.6);
  options.protocol = ProtocolChoice::kOff;
  const PlannedCollective off = plan_collective(*direct, op, g, options);
  EXPECT_FALSE(off.plan.has_transfer_ceilings());
  const double bytes = op.size.as_double();
  const double fill = (512 << 10) / 20.6e9;
  const double with = run_on_dgx_h100(nccl.plan, topo).seconds();
  const double without = run_on_dgx_h100(off.plan, topo).seconds();
  // Same latencies in both (the plan's own and the route's): the difference is the drain and the
  // fill.
  EXPECT_NEAR(with - without, bytes / 82.4e9 + fill - bytes / 450e9, 1e-9);
}

TEST(NcclP2p, AllToAllInsideANodeKeepsEachPairToItsChannels) {
  // 2 DGX H100 nodes, 16 ranks, 4 MiB to each peer (no PXN): a communicator across nodes gives
  // every peer 2 channels (NCCL_NCHANNELS_PER_NET_PEER), so each of the 2 x 8 x 7 pairs inside a
  // node is held to 2 x 20.6 GB/s; the 2 x 8 x 8 pairs across nodes are not held (their NICs
  // bind, and what a channel carries over the network is not modelled).
  const auto topo = testing::preset("dgx-h100-superpod", "{nodes: 2}");
  const Placement placement = place_group(topo, testing::first_ranks(16));
  const GroupShape g = group_shape(topo, placement);
  Operation op;
  op.kind = CollectiveKind::kAllToAll;
  op.size = Bytes(64 * kMiB);  // 4 MiB to each of 16 members
  PlanOptions options;
  options.protocol = ProtocolChoice::kAuto;
  options.pxn = false;
  const PlannedCollective planned =
      plan_collective(*builtin_algorithms().create("direct"), op, g, options);
  int held = 0, free = 0;
  for (const Transfer& t : planned.plan.transfers()) {
    if (t.is_join()) continue;
    const bool same_node = t.src.member_index() / 8 == t.dst.member_index() / 8;
    if (same_node) {
      ++held;
      // Across nodes NCCL gives every peer 2 channels: 41.2 GB/s.
      EXPECT_DOUBLE_EQ(t.rate_ceiling.gigabytes_per_second(), 2 * 20.6);
    } else {
      ++free;
      EXPECT_EQ(t.rate_ceiling.value(), 0.0);
    }
  }
  EXPECT_EQ(held, 2 * 8 * 7);
  EXPECT_EQ(free, 2 * 8 * 8);
}

}  // namespace
}  // namespace stepsim::collectives
