// One transformer layer's operations: their order, Megatron's two tensor-parallel collectives of
// b x s x h elements each way, recomputation, the MoE path, ZeRO-3 gathers, and the pieces
// DualPipe interleaves adding up to the whole layer.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/workloads/stage_parts.hpp"
#include "tests/workloads/workload_of.hpp"

namespace stepsim::workloads {
namespace {

const char* kDense = "{layers: 4, hidden: 1024, heads: 16, vocab: 32000, ffn: 4096}";
const char* kMoe =
    "{layers: 4, hidden: 1024, heads: 16, vocab: 32000, ffn: 4096, gated_mlp: true,\n"
    " moe: {experts: 8, top_k: 2, expert_ffn: 2048, dense_layers: 1}}";
// b x s x h = 2 x 2048 x 1024 elements of 2 bytes.
constexpr std::int64_t kActivationBytes = 2 * 2048 * 1024 * 2;

WorkloadSpec spec_of(const std::string& model, const std::string& parallelism,
                     const std::string& recompute = "none") {
  return workload_of(
      model, parallelism,
      "{seq_len: 2048, micro_batch: 2, global_batch: 8, recompute: " + recompute + "}");
}

StagePass pass_of(bool forward, std::int64_t begin, std::int64_t end) {
  StagePass pass;
  pass.forward = forward;
  pass.micro_batch = 3;
  pass.chunk = 1;
  pass.layer_begin = begin;
  pass.layer_end = end;
  return pass;
}

std::vector<OpName> names(const Program& p) {
  std::vector<OpName> out;
  for (const Op& op : p.ops)
    out.push_back(op.name);
  return out;
}

int count(const Program& p, OpName name, Phase phase) {
  int n = 0;
  for (const Op& op : p.ops)
    n += op.name == name && op.phase == phase ? 1 : 0;
  return n;
}

TEST(TransformerLayerEmitter, ADenseLayerForwardIsMegatronsWithTwoAllReduces) {
  StageParts parts(spec_of(kDense, "{tp: 4}"));
  const StagePass pass = pass_of(true, 0, 4);
  parts.graph.set_pass(0, 0);
  parts.layers.forward(pass, 0, Phase::kForward, {});
  const Program p = parts.graph.take_program();
  using N = OpName;
  EXPECT_EQ(names(p), (std::vector<OpName>{N::kNorm, N::kQkv, N::kAttentionCore, N::kAttentionOut,
                                           N::kTpAllReduce, N::kNorm, N::kMlpUp, N::kMlpDown,
                                           N::kTpAllReduce}));
  for (const Op& op : p.ops) {
    EXPECT_EQ(op.micro_batch, 3);  // labelled with its pass
    EXPECT_EQ(op.chunk, 1);
    if (op.name == N::kTpAllReduce) {
      EXPECT_EQ(op.bytes, kActivationBytes);
    }
  }
}

TEST(TransformerLayerEmitter, TheBackwardReducesTwiceAndFullRecomputationTwiceMore) {
  for (const char* recompute : {"none", "full", "selective"}) {
    StageParts parts(spec_of(kDense, "{tp: 4}", recompute));
    parts.layers.backward(pass_of(false, 0, 4), 2, {});
    const Program p = parts.graph.take_program();
    const bool full = std::string(recompute) == "full";
    EXPECT_EQ(count(p, OpName::kTpAllReduce, Phase::kBackward), 2) << recompute;
    EXPECT_EQ(count(p, OpName::kTpAllReduce, Phase::kRecompute), full ? 2 : 0) << recompute;
    // Selective recomputation reruns the attention core only.
    EXPECT_EQ(count(p, OpName::kAttentionCore, Phase::kRecompute),
              std::string(recompute) == "none" ? 0 : 1)
        << recompute;
    EXPECT_EQ(count(p, OpName::kMlpUp, Phase::kRecompute), full ? 1 : 0) << recompute;
  }
}

TEST(TransformerLayerEmitter, ThePiecesDualPipeInterleavesMakeTheWholeLayer) {
  const auto spec = spec_of(kMoe, "{ep: 4, dp: 4}");
  for (const std::int64_t layer : {0, 1}) {  // dense, MoE
    StageParts whole(spec);
    const StagePass forward = pass_of(true, 0, 4);
    const StagePass backward = pass_of(false, 0, 4);
    whole.layers.forward(forward, layer, Phase::kForward, {});
    whole.layers.backward(backward, layer, {});
    StageParts pieces(spec);
    const auto f = pieces.layers.forward_attention(forward, layer, Phase::kForward, {});
    pieces.layers.forward_mlp(f);
    auto b = pieces.layers.backward_begin(backward, layer, {});
    pieces.layers.backward_mlp(b);
    pieces.layers.backward_attention(b);
    const Program a = whole.graph.take_program();
    const Program c = pieces.graph.take_program();
    EXPECT_EQ(names(a), names(c));
    EXPECT_EQ(a.deps, c.deps);
  }
}

TEST(TransformerLayerEmitter, AnMoeLayerRunsTheExpertPathInPlaceOfTheMlp) {
  StageParts parts(spec_of(kMoe, "{ep: 4, dp: 4}"));
  parts.layers.forward(pass_of(true, 0, 4), 1, Phase::kForward, {});
  parts.layers.backward(pass_of(false, 0, 4), 1, {});
  const Program p = parts.graph.take_program();
  for (const Phase phase : {Phase::kForward, Phase::kBackward}) {
    EXPECT_EQ(count(p, OpName::kMlpUp, phase), 0);
    EXPECT_EQ(count(p, OpName::kRouter, phase), 1);
    EXPECT_EQ(count(p, OpName::kExperts, phase), 1);
    EXPECT_EQ(count(p, OpName::kEpDispatch, phase), 1);
    EXPECT_EQ(count(p, OpName::kEpCombine, phase), 1);
  }
}

TEST(TransformerLayerEmitter, ZeroThreeGathersTheLayerAndPrefetchesTheNext) {
  // ZeRO-3 over dp 2 with overlap_param_gather: the forward of layer 0 waits for its gathers and
  // issues layer 1's after its first norm; the last layer of the pass prefetches nothing.
  const auto spec =
      workload_of(kDense, "{dp: 2, zero: 3}",
                  "{seq_len: 2048, micro_batch: 2, global_batch: 8, overlap_param_gather: true}");
  StageParts parts(spec);
  const StagePass pass = pass_of(true, 0, 2);
  parts.zero3.begin_pass();
  parts.layers.forward(pass, 0, Phase::kForward, {});
  parts.layers.forward(pass, 1, Phase::kForward, {});
  const Program p = parts.graph.take_program();
  std::vector<std::int64_t> gathered;
  for (const Op& op : p.ops) {
    if (op.name == OpName::kZeroParamGather) gathered.push_back(op.layer);
  }
  EXPECT_EQ(gathered, (std::vector<std::int64_t>{0, 1}));
  EXPECT_EQ(p.ops[0].name, OpName::kZeroParamGather);
  EXPECT_EQ(p.ops[1].name, OpName::kNorm);
  EXPECT_EQ(p.ops[2].name, OpName::kZeroParamGather);  // layer 1's, beside layer 0
  EXPECT_EQ(p.ops[2].layer, 1);
}

}  // namespace
}  // namespace stepsim::workloads
