// Uncontended timings equal their α-β closed forms (docs/design.md, "Reference formulas").
// Setup: n ranks, per-rank link bandwidth B, link latency L; per-step latency a = step software
// latency + route latency (star: GPU -> switch -> GPU = 2L; mesh: L); the operation latency o is
// paid once. The flow network rounds each drain up to a picosecond, hence the 1e-6 tolerance.
#include <gtest/gtest.h>

#include "sim/collectives/algorithms/algorithm_registry.hpp"
#include "sim/collectives/runner/collective_session.hpp"
#include "test_topologies.hpp"

namespace stepsim::collectives {
namespace {

constexpr int kN = 8;
const BytesPerSecond kB = BytesPerSecond::gigabytes(100);
const Time kL = Time::ns(100);
const Time kStep = Time::ns(400);
const Time kOp = Time::us(3);
const double kS = 64.0 * (1 << 20);  // 64 MiB, divisible by every chunking below

PlanOptions options() {
  PlanOptions o;
  o.step_latency = kStep;
  o.op_latency = kOp;
  o.chunk_size = Bytes(1 << 20);
  return o;
}

double simulate(const topology::Topology& topo, std::string_view algo, CollectiveKind kind,
                PlanOptions plan_options = options()) {
  CollectiveSession session(topo, line_rate_presets());
  std::vector<std::uint32_t> ranks;
  for (std::uint32_t r = 0; r < topo.accelerators().size(); ++r)
    ranks.push_back(r);
  const Placement placement = place_group(topo, ranks);
  Operation op;
  op.kind = kind;
  op.size = Bytes(static_cast<std::int64_t>(kS));
  const auto registry = builtin_algorithms();
  return session.run(*registry.create(algo), op, placement, plan_options).seconds();
}

void expect_close(double simulated, double expected) {
  EXPECT_NEAR(simulated, expected, expected * 1e-6)
      << "simulated " << simulated * 1e6 << " us, closed form " << expected * 1e6 << " us";
}

const double n = kN, B = kB.value(), o = kOp.seconds();
const double a_star = kStep.seconds() + 2 * kL.seconds();
const double a_mesh = kStep.seconds() + kL.seconds();

TEST(ClosedForm, RingAllReduceStepByStepAndFluid) {
  // o + 2(n-1)·a + 2(n-1)/n·S/B; chunks of one step share their edge and finish together, so
  // chunking does not change the uncontended time.
  const double expected = o + 2 * (n - 1) * a_star + 2 * (n - 1) / n * kS / B;
  const auto topo = testing::star(kN, kB, kL);
  expect_close(simulate(topo, "ring", CollectiveKind::kAllReduce), expected);
  expect_close(simulate(topo, "ring-fluid", CollectiveKind::kAllReduce), expected);
}

TEST(ClosedForm, RingAllGatherAndReduceScatter) {
  // o + (n-1)·a + (n-1)/n·S/B.
  const double expected = o + (n - 1) * a_star + (n - 1) / n * kS / B;
  const auto topo = testing::star(kN, kB, kL);
  expect_close(simulate(topo, "ring", CollectiveKind::kAllGather), expected);
  expect_close(simulate(topo, "ring-fluid", CollectiveKind::kReduceScatter), expected);
}

TEST(ClosedForm, HalvingDoublingAllReduce) {
  // n = 2^k: o + 2k·a + 2(n-1)/n·S/B (Thakur, Rabenseifner & Gropp 2005).
  const double expected = o + 2 * 3 * a_star + 2 * (n - 1) / n * kS / B;
  expect_close(simulate(testing::star(kN, kB, kL), "halving-doubling", CollectiveKind::kAllReduce),
               expected);
}

TEST(ClosedForm, HalvingDoublingNonPowerOfTwo) {
  // n = 6 = 4 + 2: a pre- and a post-step moving S each, around the p = 4 core:
  // o + 2(a + S/B) + 2·2·a + 2·3/4·S/B.
  const double expected = o + 2 * (a_star + kS / B) + 4 * a_star + 1.5 * kS / B;
  expect_close(simulate(testing::star(6, kB, kL), "halving-doubling", CollectiveKind::kAllReduce),
               expected);
}

TEST(ClosedForm, DirectAllToAll) {
  // Each rank's link carries n-1 flows of S/n at once: o + a + (n-1)/n·S/B.
  const double expected = o + a_star + (n - 1) / n * kS / B;
  expect_close(simulate(testing::star(kN, kB, kL), "direct", CollectiveKind::kAllToAll), expected);
}

TEST(ClosedForm, DirectAllReduce) {
  // A direct reduce-scatter, then a direct all-gather: o + 2a + 2(n-1)/n·S/B.
  const double expected = o + 2 * a_star + 2 * (n - 1) / n * kS / B;
  expect_close(simulate(testing::star(kN, kB, kL), "direct", CollectiveKind::kAllReduce), expected);
}

TEST(ClosedForm, DoubleBinaryTreeIsPipelined) {
  // Mesh of 8 (a link per ordered pair), NCCL's trees of depth d = 3, C = 4 chunks of S/2/4 per
  // tree: o + (2d + C - 1)·(a + S/(2·C·B)). With C <= 5 the two trees never use one directed
  // link at the same time (tree 1's deepest broadcast edges 6->5 and 2->1 are tree 2's leaf
  // reduce edges, done by then).
  PlanOptions o4 = options();
  o4.chunk_size = Bytes(static_cast<std::int64_t>(kS / 8));
  const double C = 4, d = 3;
  const double expected = o + (2 * d + C - 1) * (a_mesh + kS / (2 * C * B));
  expect_close(simulate(testing::mesh(kN, kB, kL), "tree", CollectiveKind::kAllReduce, o4),
               expected);
}

TEST(ClosedForm, BroadcastChainIsPipelined) {
  // Chain of n-1 hops, C = 64 chunks: o + (n - 1 + C - 1)·(a + S/(C·B)); the fluid chain
  // streams all hops at once: o + (n-1)·a + S/B.
  const double C = 64;
  const double steps = o + (n - 1 + C - 1) * (a_star + kS / (C * B));
  const double fluid = o + (n - 1) * a_star + kS / B;
  const auto topo = testing::star(kN, kB, kL);
  expect_close(simulate(topo, "ring", CollectiveKind::kBroadcast), steps);
  expect_close(simulate(topo, "ring-fluid", CollectiveKind::kBroadcast), fluid);
}

TEST(ClosedForm, InSwitchAllReduce) {
  // Each member streams S + S/n up and S/n + S down at once; the route to the switch is one link
  // and the result crosses it twice (up, down): o + step + 2L + (1 + 1/n)·S/B (line rate: no
  // in-switch overhead without calibration).
  const double expected = o + kStep.seconds() + 2 * kL.seconds() + (1 + 1 / n) * kS / B;
  expect_close(simulate(testing::star(kN, kB, kL, true), "in-switch", CollectiveKind::kAllReduce),
               expected);
}

// Two levels: D = 4 domains of m = 8 (32 ranks). Per member, each intra phase moves X = (m-1)/m·S
// over its star link and the inter AllReduce Y = 2(D-1)/D·(S/m) over its NIC; an intra step costs
// a + 2L, an inter step a + 4L.
constexpr int kDomains = 4;
const double D = kDomains, m = kN;
const double X = (m - 1) / m * kS, Y = 2 * (D - 1) / D * (kS / m);

TEST(ClosedForm, HierarchicalAllReducePhaseAfterPhase) {
  // o + 2[(m-1)(a + 2L) + X/B_in] + 2(D-1)(a + 4L) + Y/B_out.
  const auto B_out = BytesPerSecond::gigabytes(10);
  const double L = kL.seconds(), a = kStep.seconds();
  const double expected =
      o + 2 * ((m - 1) * (a + 2 * L) + X / B) + 2 * (D - 1) * (a + 4 * L) + Y / B_out.value();
  const auto topo = testing::two_level(kDomains, kN, kB, B_out, kL);
  expect_close(simulate(topo, "hierarchical", CollectiveKind::kAllReduce), expected);
  // Pipelined with one chunk (a shard of S/m no larger than chunk_size) is the same plan.
  PlanOptions one_chunk = options();
  one_chunk.chunk_size = Bytes(static_cast<std::int64_t>(kS / m));
  expect_close(simulate(topo, "hierarchical-pipelined", CollectiveKind::kAllReduce, one_chunk),
               expected);
}

// Zero latencies, so that only the overlap of the phases is left. P = (S/m) / chunk_size = 8.
PlanOptions no_latency() {
  PlanOptions p = options();
  p.step_latency = Time::zero();
  return p;
}

TEST(ClosedForm, PipelinedHierarchicalInterBound) {
  // The first chunk's reduce-scatter (X/P) shares the star links with the bulk's, so it clears
  // at 2X/(P·B_in); from then on the NICs carry Y without idling, and the intra phases (at most
  // 2X in all) end earlier: o + 2X/(P·B_in) + Y/B_out.
  const auto B_out = BytesPerSecond::gigabytes(5);
  const double P = 8;
  const double expected = o + 2 * X / (P * B) + Y / B_out.value();
  ASSERT_GT(Y / B_out.value(), 2 * X / B) << "the case must be bound by the NICs";
  const auto topo = testing::two_level(kDomains, kN, kB, B_out, Time::zero());
  expect_close(simulate(topo, "hierarchical-pipelined", CollectiveKind::kAllReduce, no_latency()),
               expected);
  // Phase after phase, the same case pays both: o + 2X/B_in + Y/B_out.
  expect_close(simulate(topo, "hierarchical", CollectiveKind::kAllReduce, no_latency()),
               o + 2 * X / B + Y / B_out.value());
}

TEST(ClosedForm, PipelinedHierarchicalIntraBound) {
  // Fast NICs: the star links never idle and carry 2X: o + 2X/B_in.
  const auto B_out = BytesPerSecond::gigabytes(100);
  const double expected = o + 2 * X / B;
  const auto topo = testing::two_level(kDomains, kN, kB, B_out, Time::zero());
  expect_close(simulate(topo, "hierarchical-pipelined", CollectiveKind::kAllReduce, no_latency()),
               expected);
}

TEST(ClosedForm, PipelinedHierarchicalAllGather) {
  // Across first (shards of S/m: Y = (D-1)/D·(S/m) per NIC), then inside (X = (m-1)/m·S). The
  // first chunk's inter phase shares the NICs with the bulk's and clears at 2Y/(P·B_out); both
  // intra parts start then.
  const double P = 8, Y_ag = (D - 1) / D * (kS / m);
  const auto slow = BytesPerSecond::gigabytes(5), fast = BytesPerSecond::gigabytes(100);
  // NIC-bound: the NICs never idle; the intra phase ends earlier: o + Y/B_out.
  const auto nic_bound = testing::two_level(kDomains, kN, kB, slow, Time::zero());
  expect_close(
      simulate(nic_bound, "hierarchical-pipelined", CollectiveKind::kAllGather, no_latency()),
      o + Y_ag / slow.value());
  // Intra-bound: the star links start at 2Y/(P·B_out) and never idle: o + 2Y/(P·B_out) + X/B_in.
  const auto star_bound = testing::two_level(kDomains, kN, kB, fast, Time::zero());
  expect_close(
      simulate(star_bound, "hierarchical-pipelined", CollectiveKind::kAllGather, no_latency()),
      o + 2 * Y_ag / (P * fast.value()) + X / B);
}

}  // namespace
}  // namespace stepsim::collectives
