// Gradient buckets: a bucket's collective is issued once it holds the bucket size, after the
// operation that produced its last gradient; partial buckets close at the end of the reducing
// backward pass; passes before it accumulate locally (no_sync).
#include <gtest/gtest.h>

#include <string>

#include "sim/common/input_error.hpp"
#include "tests/workloads/workload_of.hpp"
#include "workloads/gradient_buckets.hpp"

namespace stepsim::workloads {
namespace {

WorkloadSpec spec_of(const std::string& parallelism, const std::string& training) {
  return workload_of("{layers: 2, hidden: 1024, heads: 16, vocab: 32000, ffn: 4096}", parallelism,
                     training);
}

OpIndex add_kernel(OpGraphBuilder& graph) {
  return graph.add_compute({OpName::kMlpDown, Phase::kBackward, 0}, ComputeKind::kGemm, 0, 0,
                           Time::zero(), {});
}

TEST(GradientBuckets, ABucketIsReducedAfterTheProducerOfItsLastGradient) {
  // 1,000-byte buckets of bf16 gradients (2 bytes): 300 + 300 parameters fill one (1,200 bytes).
  const auto spec = spec_of("{dp: 2}", "{seq_len: 1024, global_batch: 2, grad_bucket: 1000B}");
  OpGraphBuilder graph;
  GradientBuckets buckets(spec, graph);

  buckets.begin_backward_pass(false);  // an earlier micro-batch: gradients accumulate locally
  buckets.add_gradients(add_kernel(graph), 1000, false);
  buckets.end_backward_pass();
  EXPECT_TRUE(buckets.reductions().empty());

  buckets.begin_backward_pass(true);
  buckets.add_gradients(add_kernel(graph), 300, false);
  const OpIndex second = add_kernel(graph);
  buckets.add_gradients(second, 300, false);
  ASSERT_EQ(buckets.reductions().size(), 1u);
  const OpIndex third = add_kernel(graph);
  buckets.add_gradients(third, 100, false);
  buckets.end_backward_pass();  // closes the partial bucket of 200 bytes
  ASSERT_EQ(buckets.reductions().size(), 2u);
  ASSERT_EQ(buckets.closed().size(), 2u);
  EXPECT_EQ(buckets.closed()[0].bytes, 1200);
  EXPECT_EQ(buckets.closed()[1].bytes, 200);

  const Program p = graph.take_program();
  const Op& first_reduction = p.ops[buckets.reductions()[0]];
  EXPECT_EQ(first_reduction.collective, CollectiveKind::kAllReduce);  // ZeRO 0
  EXPECT_EQ(first_reduction.group, Communicator::kData);
  EXPECT_EQ(first_reduction.bytes, 1200);
  ASSERT_EQ(first_reduction.dep_count, 1u);
  EXPECT_EQ(p.deps_of(first_reduction)[0], second);
  EXPECT_EQ(p.deps_of(p.ops[buckets.reductions()[1]])[0], third);
}

TEST(GradientBuckets, WithoutOverlapEveryBucketWaitsForTheWholeBackward) {
  const auto spec = spec_of("{dp: 2, zero: 1}",
                            "{seq_len: 1024, global_batch: 2, grad_bucket: 1000B, "
                            "overlap_grad_reduce: false, overlap_param_gather: false}");
  OpGraphBuilder graph;
  GradientBuckets buckets(spec, graph);
  buckets.begin_backward_pass(true);
  buckets.add_gradients(add_kernel(graph), 600, false);
  buckets.add_gradients(add_kernel(graph), 600, false);
  buckets.end_backward_pass();
  EXPECT_TRUE(buckets.reductions().empty());
  const OpIndex last = add_kernel(graph);
  buckets.issue_deferred_reductions(last);
  ASSERT_EQ(buckets.reductions().size(), 2u);
  buckets.gather_parameters_after(last);
  const Program p = graph.take_program();
  for (const OpIndex r : buckets.reductions()) {
    EXPECT_EQ(p.ops[r].collective, CollectiveKind::kReduceScatter);  // ZeRO 1
    EXPECT_EQ(p.deps_of(p.ops[r])[0], last);
  }
  // ZeRO-1/2: one parameter AllGather per bucket after the optimizer.
  EXPECT_EQ(p.ops.back().name, OpName::kZeroParamGather);
  EXPECT_EQ(p.ops.back().collective, CollectiveKind::kAllGather);
}

// Megatron-LM reduces BF16 training's gradients in FP32 (its FP32 main grads) and gathers the
// updated parameters back in BF16: a bucket of P parameters reduces 4P bytes and gathers 2P.
TEST(GradientBuckets, Fp32MainGradsAreReducedInFp32AndParametersGatheredInBf16) {
  const auto spec = spec_of("{dp: 4, zero: 1}",
                            "{seq_len: 1024, global_batch: 4, grad_bucket: 1GB, "
                            "overlap_param_gather: false, grad_reduce_dtype: fp32}");
  EXPECT_EQ(spec.training.grad_reduce, Precision::kFp32);
  OpGraphBuilder graph;
  GradientBuckets buckets(spec, graph);
  buckets.begin_backward_pass(true);
  buckets.add_gradients(add_kernel(graph), 1000, false);
  buckets.add_gradients(add_kernel(graph), 500, false);
  buckets.end_backward_pass();
  ASSERT_EQ(buckets.closed().size(), 1u);
  EXPECT_EQ(buckets.closed()[0].bytes, 4 * 1500);
  EXPECT_EQ(buckets.closed()[0].parameter_bytes, 2 * 1500);
  buckets.gather_parameters_after(add_kernel(graph));
  const Program p = graph.take_program();
  EXPECT_EQ(p.ops[buckets.reductions()[0]].bytes, 6000);
  EXPECT_EQ(p.ops.back().collective, CollectiveKind::kAllGather);
  EXPECT_EQ(p.ops.back().bytes, 3000);
}

TEST(GradientBuckets, TheReductionPrecisionFollowsTheWeightsOrTheKey) {
  const auto fp16 = spec_of("{dp: 2}", "{seq_len: 1024, global_batch: 2, precision: fp16}");
  EXPECT_EQ(fp16.training.grad_reduce, Precision::kFp16);
  // FP8 training keeps its weights, and so its gradients, in BF16.
  const auto fp8 = spec_of("{dp: 2}", "{seq_len: 1024, global_batch: 2, precision: fp8}");
  EXPECT_EQ(fp8.training.grad_reduce, Precision::kBf16);
  const auto bf16 = spec_of("{dp: 2}", "{seq_len: 1024, global_batch: 2}");
  EXPECT_EQ(bf16.training.grad_reduce, Precision::kBf16);
  OpGraphBuilder graph;
  GradientBuckets buckets(bf16, graph);
  buckets.begin_backward_pass(true);
  buckets.add_gradients(add_kernel(graph), 1000, false);
  buckets.end_backward_pass();
  EXPECT_EQ(buckets.closed()[0].bytes, 2000);
  EXPECT_EQ(buckets.closed()[0].parameter_bytes, 2000);
  EXPECT_THROW(spec_of("{dp: 2}", "{seq_len: 1024, global_batch: 2, grad_reduce_dtype: fp64}"),
               InputError);
}

TEST(GradientBuckets, OneDataParallelRankReducesNothing) {
  const auto spec = spec_of("{tp: 2}", "{seq_len: 1024, global_batch: 2}");
  OpGraphBuilder graph;
  GradientBuckets buckets(spec, graph);
  buckets.begin_backward_pass(true);
  buckets.add_gradients(add_kernel(graph), 1e9, false);
  buckets.end_backward_pass();
  EXPECT_TRUE(buckets.closed().empty());
}

TEST(GradientBuckets, StepStartGathersRunInForwardOrder) {
  // The backward closed the last layers' bucket first; the next forward needs the first layers'
  // parameters first.
  OpGraphBuilder graph;
  const std::vector<ClosedBucket> closed = {{200, 100, Communicator::kData},
                                            {400, 200, Communicator::kExpertData}};
  const OpIndex gate = gather_parameters_at_step_start(closed, graph);
  const Program p = graph.take_program();
  ASSERT_EQ(p.ops.size(), 2u);
  EXPECT_EQ(gate, 0u);
  EXPECT_EQ(p.ops[0].bytes, 200);
  EXPECT_EQ(p.ops[1].bytes, 100);
  EXPECT_EQ(gather_parameters_at_step_start({}, graph), kNoOp);
}

}  // namespace
}  // namespace stepsim::workloads
