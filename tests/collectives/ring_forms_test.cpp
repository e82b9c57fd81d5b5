// The step-by-step ring and the fluid ring agree on large messages (docs/design.md, "Collectives");
// the pipelined fluid ring keeps the step form's latency (docs/collectives.md, "ring-pipelined").
#include <gtest/gtest.h>

#include <map>
#include <utility>

#include "sim/collectives/algorithms/algorithm_registry.hpp"
#include "sim/collectives/runner/collective_session.hpp"
#include "test_topologies.hpp"

namespace stepsim::collectives {
namespace {

double run_on(const topology::Topology& topo, const std::vector<std::uint32_t>& members,
              std::string_view algo, std::int64_t bytes, std::uint32_t channels = 0) {
  const Calibration calibration = calibrated_presets();
  CollectiveSession session(topo, calibration);
  Operation op;
  op.kind = CollectiveKind::kAllReduce;
  op.size = Bytes(bytes);
  PlanOptions options = calibration.plan_options();
  options.channels = channels;
  // The forms, not the protocols, are under test: the calibrated latencies (0.29 us a step) and
  // no protocol overheads (protocol_test.cpp covers those).
  options.protocol = ProtocolChoice::kOff;
  const auto registry = builtin_algorithms();
  return session.run(*registry.create(algo), op, place_group(topo, members), options).seconds();
}

double run(const topology::Topology& topo, std::uint32_t ranks, std::string_view algo,
           std::int64_t bytes, std::uint32_t channels = 0) {
  std::vector<std::uint32_t> members(ranks);
  for (std::uint32_t r = 0; r < ranks; ++r)
    members[r] = r;
  return run_on(topo, members, algo, bytes, channels);
}

constexpr std::int64_t kGiB = std::int64_t{1} << 30;

TEST(RingForms, StepByStepAndFluidAgreeOnLargeMessages) {
  // One NVLink node (8x H100): both are 14·a + 14/8·S/B exactly (closed_form_test.cpp).
  const auto node = testing::preset("dgx-h100");
  EXPECT_NEAR(run(node, 8, "ring", kGiB), run(node, 8, "ring-fluid", kGiB),
              run(node, 8, "ring-fluid", kGiB) * 0.01);
  // 2 nodes x 8 A100, one ring crossing the 200G NICs twice: NIC-bound at 2·15/16·S / 24 GB/s
  // in both forms (the step form's pipeline fill is a few steps of 30).
  const auto two = testing::preset("selene", "{nodes: 2}");
  const double steps = run(two, 16, "ring", kGiB, 1);
  const double fluid = run(two, 16, "ring-fluid", kGiB, 1);
  EXPECT_NEAR(steps, fluid, fluid * 0.01);
  EXPECT_NEAR(fluid, 2.0 * 15 / 16 * kGiB / 24e9, fluid * 0.01);
}

TEST(RingForms, AgreeFromOneMiBPerRankWhenEveryEdgeCrossesTheNetwork) {
  // A data-parallel ring: GPU 0 of each of 16 DGX H100 nodes, every edge through the NICs (one
  // route latency for all). At 16 MiB (1 MiB per rank, one chunk per step) the step form has no
  // pipelining inside a step, yet it matches the fluid form: auto switches to the fluid form there
  // for such rings (auto_algorithm.cpp).
  const auto topo = testing::preset("dgx-h100-superpod", "{nodes: 16}");
  std::vector<std::uint32_t> gpu0(16);
  for (std::uint32_t i = 0; i < 16; ++i)
    gpu0[i] = 8 * i;
  const double steps = run_on(topo, gpu0, "ring", 16 << 20);
  const double fluid = run_on(topo, gpu0, "ring-fluid", 16 << 20);
  EXPECT_NEAR(steps, fluid, fluid * 0.01);
}

TEST(RingForms, WithEightChannelsTheStepFormPaysForContention) {
  // 2 nodes x 8 A100 with the default 8 channels (every NIC carries a ring): every GPU's NVLink
  // carries 7 channels, so NVLink (232/7 = 33 GB/s a flow) is close to the NIC (24 GB/s). In the
  // step form, a step's transfers on one edge wait for the previous step upstream and share
  // NVLink with other channels' steps unevenly; measured 3.8% slower than the fluid form, which
  // stays at the NIC bound 2·15/16·(S/8) / 24 GB/s. Both stay within 5%.
  const auto two = testing::preset("selene", "{nodes: 2}");
  const double steps = run(two, 16, "ring", kGiB);
  const double fluid = run(two, 16, "ring-fluid", kGiB);
  EXPECT_NEAR(fluid, 2.0 * 15 / 16 * kGiB / 8 / 24e9, fluid * 0.01);
  EXPECT_GT(steps, fluid);
  EXPECT_LT(steps, fluid * 1.05);
}

TEST(RingForms, FluidOverstatesLatencyOfMixedRingsOnSmallMessages) {
  // At 1 KiB latency dominates. The fluid form makes every edge pay 2(n-1) times its own route
  // latency, so the slowest edge (through the NICs and the IB fabric: 1.5 us of route) sets the
  // time: 2·15·(0.29 + 1.5) us. In the step-by-step form a chunk's critical path goes around the
  // ring and crosses the slow edges only about 4 of its 30 steps (the rest are 0.3 us NVLink
  // routes), as NCCL's rings do. So the step form is faster here, by over 30%.
  const auto topo = testing::preset("selene", "{nodes: 2}");
  const double steps = run(topo, 16, "ring", 1024);
  const double fluid = run(topo, 16, "ring-fluid", 1024);
  EXPECT_LT(steps, fluid * 0.7);
}

// Bytes per (sender, receiver) and transfer count of a plan.
struct PlanSummary {
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::int64_t> edge_bytes;
  std::size_t transfers = 0;  // joins left out
};

PlanSummary summarize(const Plan& plan) {
  PlanSummary out;
  for (std::uint32_t t = 0; t < plan.size(); ++t) {
    const Transfer& x = plan.transfer(TransferId(t));
    if (x.is_join()) continue;
    ++out.transfers;
    out.edge_bytes[{x.src.member_index(), x.dst.member_index()}] += x.bytes.count();
  }
  return out;
}

TEST(RingForms, PipelinedMovesTheStepFormsBytesInFewTransfers) {
  // 2 nodes x 8 A100, 8 channels (rings that mix NVLink and NIC edges): per channel n edges of
  // fluid bytes and one chain of a chunk per step, against steps x chunks x n transfers; every
  // edge carries exactly the step form's bytes (the chain's chunks are taken off its edges' bulk).
  const auto topo = testing::preset("selene", "{nodes: 2}");
  const GroupShape group = group_shape(topo, place_group(topo, testing::first_ranks(16)));
  const Calibration calibration = calibrated_presets();
  PlanOptions options = calibration.plan_options();
  options.protocol = ProtocolChoice::kOff;
  const auto registry = builtin_algorithms();
  for (const auto kind :
       {CollectiveKind::kAllReduce, CollectiveKind::kAllGather, CollectiveKind::kReduceScatter}) {
    Operation op;
    op.kind = kind;
    op.size = Bytes((std::int64_t{384} << 20) + 12345);  // uneven shares, 4 chunks a step
    const Plan steps = registry.create("ring")->plan(op, group, options);
    const Plan pipelined = registry.create("ring-pipelined")->plan(op, group, options);
    const PlanSummary a = summarize(steps), b = summarize(pipelined);
    EXPECT_EQ(a.edge_bytes, b.edge_bytes) << to_string(kind);
    const std::size_t ring_steps = kind == CollectiveKind::kAllReduce ? 30 : 15;
    EXPECT_EQ(b.transfers, 8 * (16 + ring_steps)) << to_string(kind);
    EXPECT_GT(a.transfers, 8 * ring_steps * 16);  // more than one chunk a step
  }
}

TEST(RingForms, PipelinedKeepsTheStepFormsLatencyOnSmallMessages) {
  // At 1 KiB on 2 x 8 A100 (one ring) the critical path is one chunk going round the ring, each
  // edge at its own step and route latency: the chain is that path. The step form's slowest
  // member waits for the chain that skips the cheapest edge, which the chain also skips; the
  // fluid form pays 2(n-1) times the NIC edges' route latency instead (above).
  const auto topo = testing::preset("selene", "{nodes: 2}");
  const double steps = run(topo, 16, "ring", 1024, 1);
  const double pipelined = run(topo, 16, "ring-pipelined", 1024, 1);
  const double fluid = run(topo, 16, "ring-fluid", 1024, 1);
  EXPECT_NEAR(pipelined, steps, steps * 0.01);
  EXPECT_LT(pipelined, fluid * 0.7);
}

TEST(RingForms, PipelinedMatchesTheFluidFormOnLargeMessagesOfOneNode) {
  // 8x H100 in one NVLink domain, 1 GiB: bandwidth-bound, 14/8·S/B in every form; the chain's
  // chunks share their edges with the bulk and end with it.
  const auto node = testing::preset("dgx-h100");
  const double fluid = run(node, 8, "ring-fluid", kGiB);
  EXPECT_NEAR(run(node, 8, "ring-pipelined", kGiB), fluid, fluid * 0.01);
  EXPECT_NEAR(run(node, 8, "ring", kGiB), fluid, fluid * 0.01);
}

}  // namespace
}  // namespace stepsim::collectives
