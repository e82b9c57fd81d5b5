// NCCL's PXN (PCI x NVLink, NCCL 2.12 and later): a point-to-point transfer between nodes whose
// GPUs sit on different rails goes over NVLink to the GPU of the sender's node on the receiver's
// rail, then out through that GPU's NIC, so it stays on one rail of a rail-optimized fabric.
#include <gtest/gtest.h>

#include <string>

#include "sim/collectives/algorithms/algorithm_registry.hpp"
#include "sim/collectives/runner/collective_session.hpp"
#include "test_topologies.hpp"

namespace stepsim::collectives {
namespace {

using testing::first_ranks;

constexpr std::int64_t kMiB = std::int64_t{1} << 20;

Operation alltoall(std::int64_t bytes) {
  Operation op;
  op.kind = CollectiveKind::kAllToAll;
  op.size = Bytes(bytes);
  return op;
}

TEST(Pxn, RailIsTheGpuPositionInItsNode) {
  const auto topo = testing::preset("dgx-h100-superpod", "{nodes: 2}");
  const GroupShape shape = group_shape(topo, place_group(topo, first_ranks(16)));
  ASSERT_EQ(shape.rail.size(), 16u);
  for (std::uint32_t i = 0; i < 16; ++i)
    EXPECT_EQ(shape.rail[i], i % 8) << i;
  // A star has no NICs: no rails, no relays.
  const auto star = testing::star(8, BytesPerSecond::gigabytes(100), Time::ns(100));
  EXPECT_TRUE(group_shape(star, place_group(star, first_ranks(8))).rail.empty());
}

TEST(Pxn, AllToAllRelaysThroughTheSendersNodeOnTheReceiversRail) {
  const GroupShape shape = [] {
    GroupShape s = GroupShape::uniform(2, 8);
    for (std::uint32_t i = 0; i < 16; ++i)
      s.rail.push_back(i % 8);
    return s;
  }();
  const auto registry = builtin_algorithms();
  const Plan plan = registry.create("direct")->plan(alltoall(16 * kMiB), shape, {});
  std::size_t relayed = 0;
  for (const Transfer& t : plan.transfers()) {
    if (t.is_join()) continue;
    const std::uint32_t from = t.src.member_index(), to = t.dst.member_index();
    const bool crosses_rails = from / 8 != to / 8 && from % 8 != to % 8;
    if (!crosses_rails) {
      EXPECT_EQ(t.relay, Transfer::kNoRelay) << from << " -> " << to;
      continue;
    }
    ++relayed;
    EXPECT_EQ(t.relay, from / 8 * 8 + to % 8) << from << " -> " << to;
  }
  EXPECT_EQ(relayed, 16u * 7);  // each rank: 7 of its 8 peers on the other node
  // Off, and for the collectives NCCL runs on rings and trees, nothing is relayed.
  PlanOptions off;
  off.pxn = false;
  Operation allgather = alltoall(16 * kMiB);
  allgather.kind = CollectiveKind::kAllGather;
  for (const Plan& other : {registry.create("direct")->plan(alltoall(16 * kMiB), shape, off),
                            registry.create("direct")->plan(allgather, shape, {})})
    for (const Transfer& t : other.transfers())
      EXPECT_EQ(t.relay, Transfer::kNoRelay);
}

// Bytes carried from leaves up to spines, and the AllToAll's time, on a rail-optimized fat-tree
// of 4 nodes of 8 GPUs whose leaves (radix 5: 4 NICs down, one port up) have a quarter of their
// down-link bandwidth up (`stepsim topo cluster:nodes=4,radix=5,oversubscription=4`).
struct Outcome {
  double seconds = 0;
  double leaf_to_spine_bytes = 0;
  double nic_bytes = 0;  // leaf -> NIC, every NIC
};

Outcome run_alltoall(bool pxn,
                     const std::string& params = "{nodes: 4, radix: 5, oversubscription: 4}",
                     std::uint32_t ranks = 32,
                     topology::EcmpMode ecmp = topology::EcmpMode::kHash) {
  const auto topo = testing::preset("cluster", params);
  CollectiveSession session(topo, line_rate_presets(), RunnerOptions{ecmp});
  const Placement placement = place_group(topo, first_ranks(ranks));
  PlanOptions options = line_rate_presets().plan_options();
  options.pxn = pxn;
  const auto registry = builtin_algorithms();
  Outcome out;
  out.seconds =
      session.run(*registry.create("direct"), alltoall(256 * kMiB), placement, options).seconds();
  for (std::uint32_t l = 0; l < topo.num_links(); ++l) {
    const topology::LinkIndex link(l);
    const std::string from = topo.name(topo.source(link)), to = topo.name(topo.target(link));
    const double bytes = session.network().link_statistics(engine::LinkId{l}).bytes_carried;
    if (from.find("leaf") != std::string::npos && to.find("spine") != std::string::npos)
      out.leaf_to_spine_bytes += bytes;
    if (from.find("leaf") != std::string::npos && to.find("nic") != std::string::npos)
      out.nic_bytes += bytes;
  }
  return out;
}

TEST(Pxn, KeepsAllToAllOnItsRails) {
  const Outcome on = run_alltoall(true), off = run_alltoall(false);
  // Every byte that leaves a node reaches its receiver's NIC either way: 32 ranks x 24 peers on
  // other nodes x S/32.
  const double across = 32.0 * 24 * (256.0 * kMiB / 32);
  EXPECT_NEAR(on.nic_bytes, across, across * 1e-9);
  EXPECT_NEAR(off.nic_bytes, across, across * 1e-9);
  // With PXN nothing climbs to a spine; without it, the 7 of 8 shares that change rails do.
  EXPECT_EQ(on.leaf_to_spine_bytes, 0.0);
  EXPECT_NEAR(off.leaf_to_spine_bytes, across * 7 / 8, across * 1e-9);
  // With PXN the NICs bound the time: each carries 24 x S/32 at the 400G line rate, 50 GB/s
  // (latencies, a few microseconds against 4 ms, within the 1% allowed).
  const double nic_bound = 24 * (256.0 * kMiB / 32) / 50e9;
  EXPECT_NEAR(on.seconds, nic_bound, nic_bound * 0.01);
  // Without it the rail-crossing 7/8 share climbs the leaves' thin up-links: 3.5 times slower.
  EXPECT_GT(off.seconds, 3 * on.seconds);
}

TEST(Pxn, RelaysAcrossScalableUnitsWithEitherEcmpMode) {
  // 8 nodes of a radix-8 fabric: two scalable units of 4 nodes (leaves 4 down, 4 up), so a relayed
  // transfer to the other unit still climbs the fabric, over equal-cost paths (hashed or spread).
  // 64 ranks, S/64 per pair: 56 remote-node peers each reach a NIC; PXN leaves only the 32 peers
  // in the other unit above the leaves, without it the 21 rail-changing peers of the own unit too.
  const double share = 256.0 * kMiB / 64;
  for (auto ecmp : {topology::EcmpMode::kHash, topology::EcmpMode::kSpread}) {
    const Outcome on = run_alltoall(true, "{nodes: 8, radix: 8}", 64, ecmp);
    const Outcome off = run_alltoall(false, "{nodes: 8, radix: 8}", 64, ecmp);
    auto expect_bytes = [](double carried, double expected) {
      EXPECT_NEAR(carried, expected, expected * 1e-9);  // spread paths carry fractions
    };
    expect_bytes(on.nic_bytes, 64 * 56 * share);
    expect_bytes(off.nic_bytes, 64 * 56 * share);
    expect_bytes(on.leaf_to_spine_bytes, 64 * 32 * share);
    expect_bytes(off.leaf_to_spine_bytes, 64 * (32 + 21) * share);
  }
}

}  // namespace
}  // namespace stepsim::collectives
