// PAT (NCCL 2.23+): its plan's closed form, where NCCL's tuner takes it, and the NCCL version
// that lets `auto` offer it. Setup of the closed forms: testing::two_level with one accelerator
// per domain (NCCL's one GPU per node), each on its own NIC on one spine (links of bandwidth Bx,
// latency L): a step crosses GPU -> NIC -> spine -> NIC -> GPU, 4L.
#include <gtest/gtest.h>

#include "sim/collectives/algorithms/algorithm_registry.hpp"
#include "sim/collectives/algorithms/planned_collective.hpp"
#include "sim/collectives/nccl/nccl_tuner.hpp"
#include "sim/collectives/runner/collective_session.hpp"
#include "sim/common/input_error.hpp"
#include "test_topologies.hpp"

namespace stepsim::collectives {
namespace {

const BytesPerSecond kAcross = BytesPerSecond::gigabytes(25);
const Time kL = Time::ns(100);

Operation op(CollectiveKind kind, std::int64_t bytes) {
  Operation o;
  o.kind = kind;
  o.size = Bytes(bytes);
  return o;
}

double run(const topology::Topology& topo, std::uint32_t ranks, std::string_view algo,
           const Operation& operation, const PlanOptions& options) {
  CollectiveSession session(topo, line_rate_presets());
  const Placement placement = place_group(topo, testing::first_ranks(ranks));
  return session.run(*builtin_algorithms().create(algo), operation, placement, options).seconds();
}

TEST(PatClosedForm, LogStepsCarryTheRingsBytesOnAnyGroupSize) {
  // n = 5 (not a power of two): K = ceil(log2 5) = 3 steps of 1, 2 and 1 blocks of S/n, every rank
  // sending one message and receiving one per step, each through its own NIC:
  //   T = (n-1)/n·S/Bx + 4K·L, for AllGather (distances 1, 2, 4) and ReduceScatter (4, 2, 1).
  const std::uint32_t n = 5;
  const auto topo = testing::two_level(static_cast<int>(n), 1, kAcross, kAcross, kL);
  PlanOptions bare;
  bare.step_latency = Time::zero();
  bare.op_latency = Time::zero();
  const std::int64_t bytes = std::int64_t{5} << 20;
  const double S = static_cast<double>(bytes);
  const double expected = (n - 1.0) / n * S / kAcross.value() + 4 * 3 * kL.seconds();
  for (CollectiveKind kind : {CollectiveKind::kAllGather, CollectiveKind::kReduceScatter})
    EXPECT_NEAR(run(topo, n, "pat", op(kind, bytes), bare), expected, 1e-9 * expected)
        << to_string(kind);
  // Latencies: o once, a per step.
  PlanOptions latencies = bare;
  latencies.op_latency = Time::us(7);
  latencies.step_latency = Time::us(2);
  EXPECT_NEAR(run(topo, n, "pat", op(CollectiveKind::kAllGather, bytes), latencies) - expected,
              7e-6 + 3 * 2e-6, 1e-12);
}

TEST(Pat, OneMemberPerDomainAndAllGatherOrReduceScatterOnly) {
  const auto registry = builtin_algorithms();
  const auto pat = registry.create("pat");
  const auto nodes = testing::two_level(4, 1, kAcross, kAcross, kL);
  const GroupShape one_per_node = group_shape(nodes, place_group(nodes, testing::first_ranks(4)));
  EXPECT_FALSE(pat->unsupported(op(CollectiveKind::kAllGather, 1 << 20), one_per_node));
  EXPECT_TRUE(pat->unsupported(op(CollectiveKind::kAllReduce, 1 << 20), one_per_node));
  const auto two_per_node = testing::two_level(2, 2, kAcross, kAcross, kL);
  const GroupShape shape =
      group_shape(two_per_node, place_group(two_per_node, testing::first_ranks(4)));
  ASSERT_TRUE(pat->unsupported(op(CollectiveKind::kAllGather, 1 << 20), shape));
  EXPECT_THROW(pat->plan(op(CollectiveKind::kAllGather, 1 << 20), shape, PlanOptions{}),
               InputError);
}

TEST(NcclTuner, TakesPatFromNccl223AtOneGpuPerNodeWhereItsModelIsFastest) {
  // 16 DGX H100 nodes, GPU 0 of each (NCCL's nNodes == nRanks). PAT's latency: 8 + log2(16) x
  // 14 / 3.5 + 16 x 2.8 = 68.8 us; its bandwidth 0.75 of the NIC against the ring's full NIC: it
  // beats ring LL128 (14 + 15 x 4.0 = 74 us, x 0.7 of the NIC at one GPU per node) in the middle
  // and loses to ring Simple (8.4 + 15 x 14 us) on large sizes.
  const auto topo = testing::preset("dgx-h100-superpod", "{nodes: 16}");
  std::vector<std::uint32_t> gpu0;
  for (std::uint32_t node = 0; node < 16; ++node)
    gpu0.push_back(8 * node);
  const GroupShape shape = group_shape(topo, place_group(topo, gpu0));
  const auto allgather = [](std::int64_t bytes) { return op(CollectiveKind::kAllGather, bytes); };
  EXPECT_NEAR(*nccl_predicted_time_us(allgather(0), shape, NcclAlgorithm::kPat, Protocol::kSimple),
              68.8, 1e-9);
  EXPECT_FALSE(
      nccl_predicted_time_us(allgather(1 << 20), shape, NcclAlgorithm::kPat, Protocol::kLL));
  const auto algo = builtin_algorithms().create("auto");
  PlanOptions options;
  options.protocol = ProtocolChoice::kAuto;
  const auto label = [&](std::int64_t bytes) {
    return plan_collective(*algo, allgather(bytes), shape, options).label;
  };
  // NCCL 2.20 (the default): no PAT.
  EXPECT_EQ(label(1 << 20), "ring/LL128");
  options.nccl_version = *parse_nccl_version("2.23");
  EXPECT_EQ(label(1 << 20), "pat/Simple");
  EXPECT_EQ(label(std::int64_t{64} << 20), "ring-fluid/Simple");
  EXPECT_EQ(plan_collective(*algo, op(CollectiveKind::kAllReduce, 1 << 20), shape, options)
                .label.find("pat"),
            std::string::npos);
  // With 8 GPUs a node, no PAT.
  const GroupShape full = group_shape(topo, place_group(topo, testing::first_ranks(128)));
  EXPECT_EQ(plan_collective(*algo, allgather(1 << 20), full, options).label.find("pat"),
            std::string::npos);
  // In the flow, PAT is held to its model's 0.75 of the NIC: at 1 GiB (latency 0.01% of the
  // time) the algorithm bandwidth is the model's.
  const auto pat = builtin_algorithms().create("pat");
  const std::int64_t big = std::int64_t{1} << 30;
  CollectiveSession session(topo, calibrated_presets());
  const double seconds =
      session.run(*pat, allgather(big), place_group(topo, gpu0), options).seconds();
  const double model_us =
      *nccl_predicted_time_us(allgather(big), shape, NcclAlgorithm::kPat, Protocol::kSimple);
  EXPECT_NEAR(seconds * 1e6, model_us, 0.02 * model_us);
}

TEST(NcclVersion, ParsesMajorMinorAndPatchFromTheModelsOn) {
  EXPECT_EQ(parse_nccl_version("2.20"), 22000u);
  EXPECT_EQ(parse_nccl_version("2.23"), kNcclPatVersion);
  EXPECT_EQ(parse_nccl_version("2.29.2"), 22902u);
  EXPECT_EQ(nccl_version_string(22902), "2.29.2");
  for (const char* bad : {"", "2", "2.19", "3.0", "2.23.", ".23", "2.23.4.1", "2.123", "v2.23"})
    EXPECT_FALSE(parse_nccl_version(bad).has_value()) << bad;
}

}  // namespace
}  // namespace stepsim::collectives
