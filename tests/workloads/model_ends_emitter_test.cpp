// The embedding and the output layer: their operations, the tensor-parallel collective of each
// (b x s x h elements), the loss only in training, and their gradients.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "tests/workloads/stage_parts.hpp"
#include "tests/workloads/workload_of.hpp"
#include "workloads/layer_parameters.hpp"

namespace stepsim::workloads {
namespace {

const char* kDense = "{layers: 4, hidden: 1024, heads: 16, vocab: 32000, ffn: 4096}";
constexpr std::int64_t kActivationBytes = 2 * 2048 * 1024 * 2;  // b x s x h, bf16

WorkloadSpec spec_of(const std::string& parallelism) {
  return workload_of(kDense, parallelism, "{seq_len: 2048, micro_batch: 2, global_batch: 8}");
}

std::vector<OpName> names(const Program& p) {
  std::vector<OpName> out;
  for (const Op& op : p.ops)
    out.push_back(op.name);
  return out;
}

using N = OpName;

TEST(ModelEndsEmitter, TheVocabularyParallelEmbeddingSumsItsLookups) {
  for (const bool sp : {false, true}) {
    StageParts parts(spec_of(sp ? "{tp: 4, sp: true}" : "{tp: 4}"));
    const Frontier out = parts.ends.embedding_forward();
    const Program p = parts.graph.take_program();
    ASSERT_EQ(p.ops.size(), 2u);
    EXPECT_EQ(p.ops[0].name, N::kEmbedding);
    const Op& sum = p.ops[out.main];
    EXPECT_EQ(sum.collective, sp ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce);
    EXPECT_EQ(sum.bytes, kActivationBytes);
    EXPECT_EQ(sum.layer, kNoLayer);
  }
}

TEST(ModelEndsEmitter, TheOutputLayerEndsWithTheLossOnlyInTraining) {
  const auto spec = spec_of("{tp: 4, sp: true}");
  StageParts parts(spec);
  parts.ends.head_forward({});
  EXPECT_EQ(names(parts.graph.take_program()),
            (std::vector<OpName>{N::kNorm, N::kSpAllGather, N::kLogits, N::kLoss}));
  // An inference server projects only the last token of each sequence, without a loss.
  OpGraphBuilder graph;
  StageCompute compute(spec, graph, true);
  GradientPath gradients(spec, 0, 2, graph, compute);
  Zero3ParameterGathers zero3(spec, graph);
  const auto tensor = make_tensor_parallel_comm(spec.parallel, graph, kActivationBytes);
  MicroBatchShape last_tokens = parts.shape;
  last_tokens.tokens = 2;
  last_tokens.sharded_tokens = 2;
  ModelEndsEmitter serving(spec, parts.shape, last_tokens, false, compute, *tensor, gradients,
                           zero3);
  serving.head_forward({});
  const Program p = graph.take_program();
  EXPECT_EQ(names(p), (std::vector<OpName>{N::kNorm, N::kSpAllGather, N::kLogits}));
  // 2 FLOPs x 2 tokens x h x vocabulary / tp
  EXPECT_DOUBLE_EQ(p.ops[2].flops, 2.0 * 2 * 1024 * 32000 / 4);
}

TEST(ModelEndsEmitter, TheBackwardsReduceTheirGradients) {
  // dp 2: the output layer's, the final norm's and the embedding's gradients are reduced.
  const auto spec = spec_of("{tp: 4, dp: 2}");
  StageParts parts(spec);
  StagePass pass;
  pass.forward = false;
  pass.reduces_gradients = true;
  parts.gradients.begin_backward(pass);
  const Frontier grad = parts.ends.head_backward();
  parts.ends.embedding_backward(grad);
  parts.gradients.end_backward(parts.graph.last_op());
  const Program p = parts.graph.take_program();
  const std::vector<OpName> all = names(p);
  ASSERT_GE(all.size(), 6u);
  EXPECT_EQ(std::vector<OpName>(all.begin(), all.begin() + 5),
            (std::vector<OpName>{N::kLoss, N::kLogits, N::kTpAllReduce, N::kNorm, N::kEmbedding}));
  EXPECT_EQ(p.ops[2].bytes, kActivationBytes);
  std::int64_t reduced = 0;
  for (const Op& op : p.ops)
    reduced += op.name == N::kDpGradients ? op.bytes : 0;
  EXPECT_EQ(reduced, std::llround(output_parameters_per_rank(spec.model, 4, 1) * 2) +
                         std::llround(count_parameters(spec.model).final_norm * 2) +
                         std::llround(embedding_parameters_per_rank(spec.model, 4) * 2));
}

}  // namespace
}  // namespace stepsim::workloads
