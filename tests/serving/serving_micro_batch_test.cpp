// Two micro-batches overlapped in decode (docs/serving.md, "Two micro-batches"): the merged
// program puts one micro-batch's attention beside the other's dispatch on the executor's in-order
// streams, and on an idle network the step is the compute of both halves plus at most the last
// combine, when every all-to-all is shorter than the compute that hides it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/executor/executor.hpp"
#include "sim/run/serve.hpp"
#include "sim/scenario/serving_scenario.hpp"
#include "tests/serving/collectives_alone.hpp"
#include "workloads/op_graph_builder.hpp"
#include "workloads/step_generator.hpp"
#include "workloads/workload.hpp"

namespace stepsim {
namespace {

using workloads::OpKind;
using workloads::OpName;
using workloads::ServingPhase;

// DeepSeek-V3's shapes, 4 layers (1 dense, 3 MoE), decoding with attention data parallelism and
// 8-way expert parallelism on one DGX H100, FP8.
const char* const kDecode = R"(
topology: cluster:nodes=1
model: {preset: deepseek-v3, layers: 4, moe: {dense_layers: 1}}
compute: {device: h100}
serving:
  precision: fp8
  decode: {tp: 1, ep: 8, batch: 64, context: 4096, micro_batches: 2}
)";

ServingScenario load(const std::vector<std::string>& overrides = {}) {
  return load_serving_scenario(config::Document::parse(kDecode, "mb.yaml"), "mb", overrides);
}

workloads::Program half_program(const ServingScenario& s, std::int64_t batch) {
  return workloads::generate_forward_program(
      workloads::serving_workload(s.serving, ServingPhase::kDecode, batch),
      workloads::serving_forward_pass(s.serving, ServingPhase::kDecode, batch));
}

TEST(ServeMicroBatches, MergedOrderPutsOneAttentionBesideTheOthersDispatch) {
  const ServingScenario s = load();
  const workloads::Program a = half_program(s, 32);
  const workloads::Program merged = workloads::interleave_micro_batches({a, a});
  ASSERT_EQ(merged.ops.size(), 2 * a.ops.size());
  // Every dependency points to an earlier operation of the same micro-batch.
  for (std::uint32_t i = 0; i < merged.ops.size(); ++i) {
    for (const std::uint32_t d : merged.deps_of(merged.ops[i])) {
      EXPECT_LT(d, i);
      EXPECT_EQ(merged.ops[d].micro_batch, merged.ops[i].micro_batch);
    }
  }
  // In the last MoE layer: attention cores in micro-batch order A, B on the compute stream, and
  // on the expert stream dispatch A, dispatch B, combine A, combine B, the collectives numbered in
  // that order.
  std::vector<int> attention, expert;
  std::vector<std::uint32_t> seqs;
  for (const workloads::Op& op : merged.ops) {
    if (op.layer != 3) continue;
    if (op.name == OpName::kAttentionCore) attention.push_back(op.micro_batch);
    if (op.name == OpName::kEpDispatch || op.name == OpName::kEpCombine) {
      expert.push_back(op.micro_batch + (op.name == OpName::kEpCombine ? 10 : 0));
      seqs.push_back(op.seq);
    }
  }
  EXPECT_EQ(attention, (std::vector<int>{0, 1}));
  EXPECT_EQ(expert, (std::vector<int>{0, 1, 10, 11}));
  ASSERT_EQ(seqs.size(), 4u);
  for (std::size_t i = 1; i < seqs.size(); ++i)
    EXPECT_EQ(seqs[i], seqs[i - 1] + 1);
}

// One all-to-all of `bytes` on the expert groups of the decode pool, alone on the network.
Time all_to_all_alone(const ServingScenario& s, std::int64_t bytes) {
  return test::collectives_alone(s, OpName::kEpDispatch, CollectiveKind::kAllToAll,
                                 workloads::Communicator::kExpert, workloads::ParallelDim::kEp, 1,
                                 bytes);
}

// Closed form on an idle network: at 32 sequences per micro-batch each dispatch and combine
// (32 x 8 x 7168 bytes per rank) takes a few tens of microseconds, less than the other micro-
// batch's attention or experts (each reading a layer's weights, about 60 us), so rank 0's compute
// stream never waits but at the end: the step is the compute of both halves (rank 0's compute
// time) plus at most the last combine, which only the first micro-batch's final norm and logits
// can hide. One micro-batch of 64 waits for each of its 6 all-to-alls instead (less what the
// shared experts hide).
TEST(ServeMicroBatches, IdleNetworkStepIsBothHalvesComputePlusTheLastCombine) {
  const ServingScenario s = load();
  const PassReport two = simulate_pass(s, ServingPhase::kDecode, 64);
  const Time combine = all_to_all_alone(s, 32LL * 8 * 7168);
  const Time dispatch = combine;
  EXPECT_LT(combine, Time::us(60));
  EXPECT_GE(two.time, two.breakdown.compute);
  EXPECT_LE(two.time, two.breakdown.compute + combine)
      << "step " << format_time(two.time) << ", compute " << format_time(two.breakdown.compute)
      << ", combine alone " << format_time(combine);

  const ServingScenario single = load({"serving.decode.micro_batches=1"});
  const PassReport one = simulate_pass(single, ServingPhase::kDecode, 64);
  const auto ep = static_cast<std::size_t>(workloads::ParallelDim::kEp);
  EXPECT_EQ(two.breakdown.exposed[ep] <= combine, true);
  EXPECT_GT(one.breakdown.exposed[ep], dispatch * 3);
  // The two halves read every weight twice: more compute than one pass of 64.
  EXPECT_GT(two.breakdown.compute, one.breakdown.compute);
}

}  // namespace
}  // namespace stepsim
