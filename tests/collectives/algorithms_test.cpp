// Plans of every algorithm, checked without a network: bytes each member sends (the volumes of
// docs/design.md's reference formulas), plan sizes, and the registry's behaviour.
#include <gtest/gtest.h>

#include "sim/collectives/algorithms/algorithm_registry.hpp"
#include "sim/common/input_error.hpp"

namespace stepsim::collectives {
namespace {

constexpr std::int64_t kMiB = std::int64_t{1} << 20;

Plan make(std::string_view algo, CollectiveKind kind, Bytes size, const GroupShape& group,
          PlanOptions options = {}) {
  const auto registry = builtin_algorithms();
  Operation op;
  op.kind = kind;
  op.size = size;
  return registry.create(algo)->plan(op, group, options);
}

Operation op_of(CollectiveKind kind, Bytes size) {
  Operation op;
  op.kind = kind;
  op.size = size;
  return op;
}

void expect_every_member_sends(const Plan& plan, std::uint32_t n, Bytes expected) {
  const auto sent = plan.bytes_sent(n);
  for (std::uint32_t i = 0; i < n; ++i)
    EXPECT_EQ(sent[i], expected) << "member " << i;
}

TEST(Algorithms, RingAllReduceSendsTwoNMinusOneOverNOfTheBuffer) {
  // Ring AllReduce volume per rank: 2(n-1)/n · S = 14/8 · 8 MiB = 14 MiB, in both forms.
  const auto group = GroupShape::single_domain(8);
  PlanOptions options;
  options.chunk_size = Bytes(256 << 10);  // 1 MiB segments -> 4 chunks per step
  const Plan steps = make("ring", CollectiveKind::kAllReduce, Bytes(8 * kMiB), group, options);
  expect_every_member_sends(steps, 8, Bytes(14 * kMiB));
  // 2(n-1) steps x 4 chunks x 8 edges, plus one join per member over its 4 final chunks.
  EXPECT_EQ(steps.size(), 14u * 4 * 8 + 8);
  const Plan fluid =
      make("ring-fluid", CollectiveKind::kAllReduce, Bytes(8 * kMiB), group, options);
  expect_every_member_sends(fluid, 8, Bytes(14 * kMiB));
  EXPECT_EQ(fluid.size(), 8u);
  EXPECT_EQ(fluid.transfer(TransferId(0)).path_traversals, 14u);
}

TEST(Algorithms, FluidRingStaysCompactAtScale) {
  // One transfer per ring edge: 65,536 ranks, 65,536 transfers, no dependencies.
  const Plan plan = make("ring-fluid", CollectiveKind::kAllReduce, Bytes(kMiB * 64),
                         GroupShape::single_domain(65536));
  EXPECT_EQ(plan.size(), 65536u);
  EXPECT_EQ(plan.num_dependencies(), 0u);
}

TEST(Algorithms, RingAcrossDomainsUsesOneChannelPerLocalMember) {
  // 2 domains x 8: 8 channels (one per local member), each ring leaving every domain once.
  const auto group = GroupShape::uniform(2, 8);
  const Plan plan = make("ring-fluid", CollectiveKind::kAllReduce, Bytes(16 * kMiB), group);
  std::size_t network = 0, crossing = 0;
  std::vector<int> leaves(16);
  for (const auto& t : plan.transfers()) {
    if (t.is_join()) continue;
    ++network;
    if (t.src.member_index() / 8 != t.dst.member_index() / 8) {
      ++crossing;
      ++leaves[t.src.member_index()];
    }
  }
  EXPECT_EQ(network, 8u * 16);
  EXPECT_EQ(crossing, 8u * 2);
  for (int l : leaves)
    EXPECT_EQ(l, 1);  // every member's NIC sends exactly one ring
  expect_every_member_sends(plan, 16, Bytes(30 * kMiB));  // 2·15/16·16 MiB
}

TEST(Algorithms, AllGatherAndReduceScatterRingsSendNMinusOneOverN) {
  const auto group = GroupShape::single_domain(4);
  expect_every_member_sends(make("ring", CollectiveKind::kAllGather, Bytes(4 * kMiB), group), 4,
                            Bytes(3 * kMiB));
  expect_every_member_sends(
      make("ring-fluid", CollectiveKind::kReduceScatter, Bytes(4 * kMiB), group), 4,
      Bytes(3 * kMiB));
}

TEST(Algorithms, BroadcastChainFromTheRootSendsTheBufferOncePerHop) {
  Operation op;
  op.kind = CollectiveKind::kBroadcast;
  op.size = Bytes(kMiB);
  op.root = 3;
  const auto registry = builtin_algorithms();
  const Plan plan = registry.create("ring")->plan(op, GroupShape::single_domain(5), {});
  const auto received = plan.bytes_received(5);
  EXPECT_EQ(received[3], Bytes(0));  // the root receives nothing
  for (std::uint32_t i : {0u, 1u, 2u, 4u})
    EXPECT_EQ(received[i], Bytes(kMiB));
}

TEST(Algorithms, DoubleBinaryTreeMovesHalfTheBufferPerTree) {
  // Two trees over 8 ranks, 7 edges each, half the buffer up and down every edge: 2·2·7·S/2.
  PlanOptions options;
  options.chunk_size = Bytes(kMiB);
  const Plan plan = make("tree", CollectiveKind::kAllReduce, Bytes(8 * kMiB),
                         GroupShape::single_domain(8), options);
  EXPECT_EQ(plan.total_bytes(), Bytes(14 * 8 * kMiB));
  // NCCL's tree: rank 0 is the root of tree 1 with the single child 4 (0 <- 4 <- {2, 6} <-
  // {1, 3, 5, 7}); tree 2 mirrors it (r -> 7 - r). Rank 0 receives S/2 up from 4 in tree 1 and
  // S/2 down from 1 in tree 2 (a leaf there). Rank 3 is a leaf of tree 1 (S/2 down from 2) and
  // in tree 2 the image of 4: S/2 up from each of 5 and 1, S/2 down from the root 7.
  const auto received = plan.bytes_received(8);
  EXPECT_EQ(received[0], Bytes(8 * kMiB));
  EXPECT_EQ(received[3], Bytes(16 * kMiB));
  for (std::uint32_t i = 0; i < 8; ++i)
    EXPECT_GE(received[i], Bytes(8 * kMiB)) << i;  // everyone gets the whole result
}

TEST(Algorithms, HalvingDoublingVolumes) {
  // Power of two: 2(n-1)/n · S per rank. Six ranks: p = 4 core plus 2 helpers: the odd ranks 1
  // and 3 send S before and nothing else; the core sends 2·3/4·S and ranks 0, 2 send S after.
  expect_every_member_sends(make("halving-doubling", CollectiveKind::kAllReduce, Bytes(8 * kMiB),
                                 GroupShape::single_domain(8)),
                            8, Bytes(14 * kMiB));
  const Plan odd = make("halving-doubling", CollectiveKind::kAllReduce, Bytes(8 * kMiB),
                        GroupShape::single_domain(6));
  const auto sent = odd.bytes_sent(6);
  EXPECT_EQ(sent[1], Bytes(8 * kMiB));
  EXPECT_EQ(sent[3], Bytes(8 * kMiB));
  EXPECT_EQ(sent[0], Bytes(12 * kMiB + 8 * kMiB));
  EXPECT_EQ(sent[5], Bytes(12 * kMiB));
  const auto registry = builtin_algorithms();
  const Operation ag = op_of(CollectiveKind::kAllGather, Bytes(kMiB));
  EXPECT_TRUE(registry.create("halving-doubling")->unsupported(ag, GroupShape::single_domain(6)));
}

TEST(Algorithms, DirectAllToAllAndAllToAllv) {
  expect_every_member_sends(
      make("direct", CollectiveKind::kAllToAll, Bytes(4 * kMiB), GroupShape::single_domain(4)), 4,
      Bytes(3 * kMiB));
  Operation op;
  op.kind = CollectiveKind::kAllToAllv;
  op.matrix = {Bytes(0), Bytes(5), Bytes(7), Bytes(1), Bytes(0),
               Bytes(0), Bytes(2), Bytes(3), Bytes(9)};
  const auto registry = builtin_algorithms();
  const Plan plan = registry.create("direct")->plan(op, GroupShape::single_domain(3), {});
  EXPECT_EQ(plan.bytes_sent(3), (std::vector<Bytes>{Bytes(12), Bytes(1), Bytes(5)}));
  op.matrix.pop_back();
  EXPECT_THROW(registry.create("direct")->plan(op, GroupShape::single_domain(3), {}), InputError);
}

TEST(Algorithms, HierarchicalIsAboutThreeTransfersPerRank) {
  // 4 domains x 8: intra reduce-scatter 7/8·S, inter AllReduce of S/8 over 4: 2·3/4·S/8, intra
  // all-gather 7/8·S. S = 64 MiB: 56 + 12 + 56 = 124 MiB... per rank 7/8·64·2 + 1.5/8·64 = 124 MiB.
  const Plan plan =
      make("hierarchical", CollectiveKind::kAllReduce, Bytes(64 * kMiB), GroupShape::uniform(4, 8));
  expect_every_member_sends(plan, 32, Bytes(124 * kMiB));
  EXPECT_LE(plan.size(), 3u * 32 + 32);
}

TEST(Algorithms, PipelinedHierarchicalMovesTheSameBytesInTwoParts) {
  // The first chunk and the bulk move the bytes of the phased plan between them; about 6n
  // transfers. The bulk's inter phase waits for the first chunk's reduce-scatter, not for its own.
  const auto shape = GroupShape::uniform(4, 8);
  const Plan plan =
      make("hierarchical-pipelined", CollectiveKind::kAllReduce, Bytes(64 * kMiB), shape);
  expect_every_member_sends(plan, 32, Bytes(124 * kMiB));
  EXPECT_LE(plan.size(), 6u * 32 + 64);
  EXPECT_GT(plan.size(), 3u * 32 + 32);
  for (CollectiveKind kind : {CollectiveKind::kAllGather, CollectiveKind::kReduceScatter}) {
    const Plan phased = make("hierarchical", kind, Bytes(64 * kMiB), shape);
    const Plan pipelined = make("hierarchical-pipelined", kind, Bytes(64 * kMiB), shape);
    EXPECT_EQ(pipelined.bytes_sent(32), phased.bytes_sent(32)) << to_string(kind);
    EXPECT_EQ(pipelined.bytes_received(32), phased.bytes_received(32)) << to_string(kind);
  }
}

TEST(Algorithms, InSwitchNeedsAReducingSwitch) {
  const auto registry = builtin_algorithms();
  const Operation op = op_of(CollectiveKind::kAllReduce, Bytes(8 * kMiB));
  EXPECT_TRUE(registry.create("in-switch")->unsupported(op, GroupShape::single_domain(8)));
  EXPECT_THROW(registry.create("in-switch")->plan(op, GroupShape::single_domain(8), {}),
               InputError);
  // NVLS AllReduce: S + S/n up and S/n + S down per member.
  const Plan plan = registry.create("in-switch")->plan(op, GroupShape::single_domain(8, true), {});
  expect_every_member_sends(plan, 8, Bytes(9 * kMiB));
  EXPECT_EQ(plan.bytes_received(8)[5], Bytes(9 * kMiB));
}

TEST(Algorithms, AutoFollowsItsDocumentedRules) {
  const auto registry = builtin_algorithms();
  const auto algo = registry.create("auto");
  auto pick = [&](CollectiveKind kind, std::int64_t bytes, const GroupShape& g) {
    return std::string(algo->resolve(op_of(kind, Bytes(bytes)), g));
  };
  EXPECT_EQ(pick(CollectiveKind::kAllToAll, kMiB, GroupShape::single_domain(8)), "direct");
  EXPECT_EQ(pick(CollectiveKind::kAllReduce, 256 * kMiB, GroupShape::single_domain(8, true)),
            "in-switch");
  EXPECT_EQ(pick(CollectiveKind::kAllReduce, 4 * kMiB, GroupShape::single_domain(8)), "ring");
  // From 1 MiB per rank when the ring's edges are alike (one domain, or one member per domain),
  // 4 MiB when it mixes NVLink and network edges: the fluid ring (agrees with the step form within
  // 1% there, far fewer flows).
  EXPECT_EQ(pick(CollectiveKind::kAllReduce, 8 * kMiB, GroupShape::single_domain(8)), "ring-fluid");
  EXPECT_EQ(pick(CollectiveKind::kReduceScatter, 48 * kMiB, GroupShape::uniform(48, 1)),
            "ring-fluid");
  EXPECT_EQ(pick(CollectiveKind::kAllReduce, 16 * kMiB, GroupShape::uniform(2, 8)), "ring");
  EXPECT_EQ(pick(CollectiveKind::kAllReduce, 64 * kMiB, GroupShape::uniform(2, 8)), "ring-fluid");
  // AllGather / ReduceScatter keep the ring on NVLS hardware: the published 8xH200 busbw (361.4,
  // 362.9 GB/s) is the ring's (validation/data/nccl_busbw.yaml, h200_nvls).
  EXPECT_EQ(pick(CollectiveKind::kAllGather, 4 * kMiB, GroupShape::single_domain(8, true)), "ring");
  EXPECT_EQ(pick(CollectiveKind::kReduceScatter, 256 * kMiB, GroupShape::single_domain(8, true)),
            "ring-fluid");
  EXPECT_EQ(pick(CollectiveKind::kAllReduce, 4096, GroupShape::single_domain(8, true)),
            "halving-doubling");
  EXPECT_EQ(pick(CollectiveKind::kAllReduce, 256 * kMiB, GroupShape::uniform(16, 8)),
            "hierarchical-pipelined");
  EXPECT_EQ(pick(CollectiveKind::kAllReduce, 256 * kMiB, GroupShape::single_domain(128)),
            "ring-fluid");
  EXPECT_EQ(pick(CollectiveKind::kBroadcast, kMiB, GroupShape::single_domain(8)), "ring");
}

TEST(Algorithms, UnknownAlgorithmSuggestsTheClosest) {
  const auto registry = builtin_algorithms();
  try {
    registry.create("rign");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean 'ring'"), std::string::npos) << e.what();
  }
  const auto names = registry.names();
  for (const char* name :
       {"auto", "direct", "halving-doubling", "hierarchical", "hierarchical-pipelined", "in-switch",
        "mesh", "ring", "ring-fluid", "tree"})
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
}

}  // namespace
}  // namespace stepsim::collectives
