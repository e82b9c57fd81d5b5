// The data-parallel / ZeRO gradient path: backward GEMMs and their gradients into the buckets,
// DualPipe's deferred weight gradients, and the step's gradient reductions and optimizer against
// their closed forms (every gradient reduced once: the rank's parameters x 2 bytes, of which a
// ring AllReduce moves 2 (n - 1) / n per rank).
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "tests/workloads/workload_of.hpp"
#include "workloads/gradient_path.hpp"
#include "workloads/layer_costs.hpp"
#include "workloads/memory_model.hpp"
#include "workloads/step_generator.hpp"

namespace stepsim::workloads {
namespace {

const char* kModel = "{layers: 4, hidden: 1024, heads: 16, vocab: 32000, ffn: 4096}";

WorkloadSpec spec_of(const std::string& parallelism) {
  return workload_of(kModel, parallelism, "{seq_len: 1024, micro_batch: 1, global_batch: 8}");
}

StagePass backward_pass(bool reduces, bool defers) {
  StagePass pass;
  pass.forward = false;
  pass.reduces_gradients = reduces;
  pass.defers_weights = defers;
  return pass;
}

const OpLabel kDown{OpName::kMlpDown, Phase::kBackward, 0};

TEST(GradientPath, ABackwardGemmComputesBothHalvesAndItsGradientsAreReduced) {
  const auto spec = spec_of("{dp: 2}");
  OpGraphBuilder graph;
  StageCompute compute(spec, graph, false);
  GradientPath gradients(spec, 0, 2, graph, compute);
  gradients.begin_backward(backward_pass(true, false));
  const OpIndex gemm =
      gradients.backward_gemm(kDown, ComputeKind::kGemm, {1e9, 1e6}, {}, 1000, false);
  gradients.end_backward(gemm);
  const Program p = graph.take_program();
  ASSERT_EQ(p.ops.size(), 2u);
  EXPECT_DOUBLE_EQ(p.ops[gemm].flops, 2e9);  // twice the forward
  const Op& reduction = p.ops[1];
  EXPECT_EQ(reduction.name, OpName::kDpGradients);
  EXPECT_EQ(reduction.collective, CollectiveKind::kAllReduce);
  EXPECT_EQ(reduction.group, Communicator::kData);
  EXPECT_EQ(reduction.bytes, 2000);  // 1,000 bf16 gradients
  EXPECT_EQ(p.deps_of(reduction)[0], gemm);
}

TEST(GradientPath, ADeferringBackwardLeavesItsWeightGradientsToTheWeightPass) {
  const auto spec = spec_of("{dp: 2}");
  OpGraphBuilder graph;
  StageCompute compute(spec, graph, false);
  GradientPath gradients(spec, 0, 2, graph, compute);
  gradients.begin_backward(backward_pass(false, true));
  const OpIndex input_half =
      gradients.backward_gemm(kDown, ComputeKind::kGemm, {1e9, 1e6}, {}, 1000, false);
  const OpIndex norm = graph.add_compute({OpName::kNorm, Phase::kBackward, 0},
                                         ComputeKind::kElementwise, 0, 0, Time::zero(), {});
  gradients.add_gradients(norm, 24, false);
  gradients.end_backward(norm);
  EXPECT_THROW(gradients.check_weights_done(), std::logic_error);

  StagePass weights;
  weights.forward = false;
  weights.weights_only = true;
  weights.reduces_gradients = true;
  gradients.weight_pass(weights);
  EXPECT_NO_THROW(gradients.check_weights_done());
  EXPECT_THROW(gradients.weight_pass(weights), std::logic_error);  // nothing left to complete
  const Program p = graph.take_program();
  ASSERT_EQ(p.ops.size(), 4u);
  EXPECT_DOUBLE_EQ(p.ops[input_half].flops, 1e9);  // the input-gradient half
  const Op& weight_half = p.ops[2];
  EXPECT_EQ(weight_half.name, OpName::kMlpDown);
  EXPECT_DOUBLE_EQ(weight_half.flops, 1e9);
  EXPECT_EQ(p.deps_of(weight_half)[0], input_half);
  // One bucket of both gradients, reduced after the norm that computed the last of them.
  EXPECT_EQ(p.ops[3].bytes, (1000 + 24) * 2);
  EXPECT_EQ(p.deps_of(p.ops[3])[0], norm);
}

std::int64_t sum_bytes(const Program& p, OpName name, CollectiveKind kind) {
  std::int64_t total = 0;
  for (const Op& op : p.ops) {
    if (op.name == name && op.collective == kind) total += op.bytes;
  }
  return total;
}

TEST(GradientPath, EveryGradientIsReducedOnceAndTheOptimizerWaitsForAll) {
  // One stage: the rank holds every parameter (tp 1); bf16 gradients.
  const std::int64_t bytes = std::llround(rank_parameters(spec_of("{dp: 4}"), 0).dense * 2);
  const Program ddp = generate_stage_program(spec_of("{dp: 4}"), 0);
  EXPECT_EQ(sum_bytes(ddp, OpName::kDpGradients, CollectiveKind::kAllReduce), bytes);
  // ZeRO-1: ReduceScatter of the gradients, the optimizer on a quarter of the parameters, then an
  // AllGather of the updated parameters of the same volume.
  const auto spec = spec_of("{dp: 4, zero: 1}");
  const Program zero1 = generate_stage_program(spec, 0);
  EXPECT_EQ(sum_bytes(zero1, OpName::kDpGradients, CollectiveKind::kReduceScatter), bytes);
  EXPECT_EQ(sum_bytes(zero1, OpName::kZeroParamGather, CollectiveKind::kAllGather), bytes);
  int reductions = 0;
  const Op* optimizer = nullptr;
  for (const Op& op : zero1.ops) {
    if (op.name == OpName::kDpGradients) ++reductions;
    if (op.name == OpName::kOptimizerStep) optimizer = &op;
  }
  ASSERT_NE(optimizer, nullptr);
  EXPECT_EQ(static_cast<int>(optimizer->dep_count), reductions);
  const OpCost cost = optimizer_step_cost(rank_parameters(spec, 0).dense / 4, 2);
  EXPECT_DOUBLE_EQ(optimizer->flops, cost.flops);
}

TEST(GradientPath, DualPipeExchangesTheUpdatedShardWithTheMirror) {
  // pp 4 under DualPipe: stage 1's mirror is stage 2 (offset pp - 1 - 2 s = +1); ZeRO-1 over dp 2
  // exchanges the half of the stage's gradients this rank updates, in bf16.
  const auto spec = workload_of(kModel, "{pp: 4, dp: 2, zero: 1, schedule: dualpipe}",
                                "{seq_len: 1024, micro_batch: 1, global_batch: 16}");
  const Program p = generate_stage_program(spec, 1);
  const std::int64_t bytes = std::llround(rank_parameters(spec, 1).total() / 2 * 2);
  int exchanges = 0;
  for (const Op& op : p.ops) {
    if (op.name != OpName::kDpGradients || op.group != Communicator::kPipeline) continue;
    ++exchanges;
    EXPECT_EQ(op.peer_offset, 1);
    EXPECT_EQ(op.bytes, bytes);
  }
  EXPECT_EQ(exchanges, 2);  // a send and a receive
}

}  // namespace
}  // namespace stepsim::workloads
