// The FLOPs and HBM bytes of each compute operation of a layer against closed forms derived here
// from the shapes (docs/design.md, "Reference formulas"; docs/workloads.md, "Models, parameters
// and FLOPs"): a GEMM of T tokens from `in` to `out` features costs 2·T·in·out FLOPs and moves
// (T·in + in·out + T·out) elements; attention scores and weighted values cost 2·s·(query width)
// and 2·s·(value width) per token over the full s x s; a backward costs twice its forward.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "tests/workloads/workload_of.hpp"
#include "workloads/layer_costs.hpp"
#include "workloads/layer_parameters.hpp"

namespace stepsim::workloads {
namespace {

// GPT-like: h = 1024, 16 heads of 64, plain MLP of 4h, no biases; bf16 (2 bytes).
const char* kDense = "{layers: 4, hidden: 1024, heads: 16, vocab: 32000, ffn: 4096}";
constexpr double h = 1024;
constexpr double e = 2;

void expect_cost(OpCost cost, double flops, double bytes, const char* what) {
  EXPECT_DOUBLE_EQ(cost.flops, flops) << what;
  EXPECT_DOUBLE_EQ(cost.bytes, bytes) << what;
}

TEST(MicroBatchShape, TokensAreSplitByContextAndSequenceParallelism) {
  // b = 2, s = 4096, cp = 2: T = b·s/cp = 4096; SP over t = 4 shards them to 1024 per rank.
  const auto spec = workload_of(kDense, "{tp: 4, sp: true, cp: 2}",
                                "{seq_len: 4096, micro_batch: 2, global_batch: 2}");
  const MicroBatchShape shape = micro_batch_shape(spec);
  EXPECT_EQ(shape.seq_len, 4096);
  EXPECT_EQ(shape.tokens, 4096);
  EXPECT_EQ(shape.sharded_tokens, 1024);
  EXPECT_EQ(shape.routed_tokens, 0);  // a dense model routes nothing
  EXPECT_EQ(shape.element_bytes, 2);
}

TEST(LayerCosts, DenseLayerForwardIsMegatronsTwentyFourBshSquaredPlusFourBsSquaredH) {
  // Narayanan et al. 2021: a layer's forward is 24·b·s·h² + 4·b·s²·h FLOPs (MLP of 4h), split
  // over t tensor-parallel ranks. b = 2, s = 2048, t = 4.
  const double b = 2, s = 2048, t = 4, T = b * s;
  const auto spec =
      workload_of(kDense, "{tp: 4}", "{seq_len: 2048, micro_batch: 2, global_batch: 2}");
  const LayerCosts c = layer_forward_costs(spec.model, micro_batch_shape(spec), 0);
  // Per piece: QKV 3 GEMMs h -> h; scores and values over the whole sequence; output h -> h;
  // up h -> 4h; down 4h -> h.
  expect_cost(c.qkv, 2 * T * h * 3 * h / t, (T * h + 3 * h * h / t + T * 3 * h / t) * e, "qkv");
  expect_cost(c.attention_core, 4 * b * s * s * h / t, T * (h + h + 2 * h) / t * e, "core");
  expect_cost(c.attention_out, 2 * T * h * h / t, (T * h / t + h * h / t + T * h) * e, "out");
  expect_cost(c.mlp_up, 2 * T * h * 4 * h / t, (T * h + 4 * h * h / t + T * 4 * h / t) * e, "up");
  expect_cost(c.mlp_down, 2 * T * 4 * h * h / t, (T * 4 * h / t + 4 * h * h / t + T * h) * e,
              "down");
  // Norms are replicated (no SP): 5 FLOPs per element, read and written once.
  expect_cost(c.norm, 5 * T * h, 2 * T * h * e, "norm");
  const double total = c.qkv.flops + c.attention_core.flops + c.attention_out.flops +
                       c.mlp_up.flops + c.mlp_down.flops;
  EXPECT_NEAR(total / ((24 * b * s * h * h + 4 * b * s * s * h) / t), 1.0, 1e-12);
  EXPECT_EQ(c.router.flops + c.shared_experts.flops + c.routed_experts.flops, 0.0);
}

TEST(LayerCosts, BackwardIsTwiceTheForward) {
  const OpCost backward = backward_cost({3.0e12, 5.0e9});
  EXPECT_EQ(backward.flops, 6.0e12);
  EXPECT_EQ(backward.bytes, 1.0e10);
}

TEST(LayerCosts, GroupedQueryAttentionProjectsFewerKeysAndValues) {
  // 16 query heads of 64, 4 KV heads: Q is h -> h, K and V h -> 256 each; SP shards the norms.
  const double T = 2048, t = 2, kv = 4 * 64;
  const auto spec = workload_of(
      "{layers: 2, hidden: 1024, heads: 16, kv_heads: 4, vocab: 32000, ffn: 3584, gated_mlp: "
      "true}",
      "{tp: 2, sp: true}", "{seq_len: 2048, micro_batch: 1, global_batch: 1}");
  const LayerCosts c = layer_forward_costs(spec.model, micro_batch_shape(spec), 0);
  expect_cost(c.qkv, 2 * T * h * (h + 2 * kv) / t,
              (T * h + h * (h + 2 * kv) / t + T * (h + 2 * kv) / t) * e, "qkv");
  expect_cost(c.attention_core, 4 * T * T * h / t, T * (h + kv + 2 * h) / t * e, "core");
  // Gated MLP: gate and up (h -> 2·ffn), down (ffn -> h).
  const double ffn = 3584;
  expect_cost(c.mlp_up, 2 * T * h * 2 * ffn / t, (T * h + 2 * h * ffn / t + T * 2 * ffn / t) * e,
              "up");
  expect_cost(c.mlp_down, 2 * T * ffn * h / t, (T * ffn / t + ffn * h / t + T * h) * e, "down");
  expect_cost(c.norm, 5 * (T / t) * h, 2 * (T / t) * h * e, "norm");
}

TEST(LayerCosts, MoeLayerRoutesTopKTokensToTheRanksExperts) {
  // 8 experts of FFN 2048 (gated: 3 matrices), top-2, one shared expert; ep 4 holds 2 experts
  // per rank. Under SP (t = 2) the router and experts see T/t tokens; the routed experts compute
  // T/t·k token-expert pairs (uniform routing: the mean load).
  const double T = 2048, t = 2, k = 2, experts = 8, ffn = 2048;
  const std::string moe =
      "{layers: 2, hidden: 1024, heads: 16, vocab: 32000, ffn: 4096, gated_mlp: true, moe: "
      "{experts: 8, top_k: 2, shared_experts: 1, expert_ffn: 2048, dense_layers: 1}}";
  const auto spec = workload_of(moe, "{tp: 2, sp: true, ep: 4, dp: 4}",
                                "{seq_len: 2048, micro_batch: 1, global_batch: 4}");
  const MicroBatchShape shape = micro_batch_shape(spec);
  EXPECT_EQ(shape.routed_tokens, 2048);
  const LayerCosts dense = layer_forward_costs(spec.model, shape, 0);
  EXPECT_GT(dense.mlp_up.flops, 0.0);
  EXPECT_EQ(dense.routed_experts.flops, 0.0);
  const LayerCosts c = layer_forward_costs(spec.model, shape, 1);
  EXPECT_EQ(c.mlp_up.flops + c.mlp_down.flops, 0.0);
  const double tokens = T / t, pairs = tokens * k;
  expect_cost(c.router, 2 * tokens * h * experts, (tokens * h + h * experts + tokens * experts) * e,
              "router");
  expect_cost(c.shared_experts, 2 * tokens * 3 * h * ffn,
              (tokens * h + 3 * h * ffn + tokens * ffn) * e, "shared");
  expect_cost(c.routed_experts, 2 * pairs * 3 * h * ffn,
              (pairs * h + (experts / 4) * 3 * h * ffn + pairs * ffn) * e, "routed");
}

TEST(LayerCosts, CapacityFactorPadsTheRoutedTokens) {
  const auto spec = workload_of(
      "{layers: 2, hidden: 1024, heads: 16, vocab: 32000, ffn: 4096, moe: {experts: 8, top_k: 2, "
      "expert_ffn: 2048, capacity_factor: 1.25}}",
      "{ep: 2, dp: 2}", "{seq_len: 1000, micro_batch: 1, global_batch: 2}");
  // 1000 tokens x top-2 x 1.25.
  EXPECT_EQ(micro_batch_shape(spec).routed_tokens, 2500);
}

TEST(LayerCosts, OutputLayerAndLossCoverTheRanksVocabularyRows) {
  // Vocabulary 32001 over t = 4: 8001 rows per rank (padded); logits 2·T·h·rows; the loss reads
  // and writes FP32 logits.
  const double T = 4096, rows = 8001;
  const auto spec = workload_of("{layers: 4, hidden: 1024, heads: 16, vocab: 32001, ffn: 4096}",
                                "{tp: 4}", "{seq_len: 2048, micro_batch: 2, global_batch: 2}");
  const MicroBatchShape shape = micro_batch_shape(spec);
  EXPECT_EQ(vocabulary_rows_per_rank(spec.model, 4), 8001);
  const HeadCosts c = head_forward_costs(spec.model, shape);
  // output_flops_per_token counts the whole vocabulary (2·h·V), split over t.
  EXPECT_DOUBLE_EQ(c.logits.flops, 2 * T * h * 32001 / 4);
  EXPECT_DOUBLE_EQ(c.logits.bytes, (T * h + rows * h + T * rows) * e);
  expect_cost(c.loss, 5 * T * rows, 2 * T * rows * 4, "loss");
  expect_cost(c.final_norm, 5 * T * h, 2 * T * h * e, "final norm");
  expect_cost(embedding_forward_cost(spec.model, shape), 0, 2 * T * h * e, "embedding");
}

TEST(LayerCosts, AdamStepIsTenFlopsAndTwoElementsPlusTwentyFourBytesPerParameter) {
  // Mixed precision: gradient (e) in, weight (e) out, FP32 master weight and two moments
  // (3 x 4 bytes) read and written.
  expect_cost(optimizer_step_cost(1e9, 2), 1e10, 1e9 * (2 + 2 + 24), "adam");
}

TEST(LayerParameters, SplitOverTensorAndExpertParallelRanks) {
  // Dense layer, t = 4: QKV 3h², output h², MLP 8h² split; norms (h each) replicated.
  const auto spec =
      workload_of(kDense, "{tp: 4}", "{seq_len: 2048, micro_batch: 1, global_batch: 1}");
  const auto counts = count_parameters(spec.model);
  const LayerParameters p = layer_parameters_per_rank(spec.model, counts, 4, 1, 0);
  EXPECT_DOUBLE_EQ(p.qkv, 3 * h * h / 4);
  EXPECT_DOUBLE_EQ(p.attention_out, h * h / 4);
  EXPECT_DOUBLE_EQ(p.norm, h);
  EXPECT_DOUBLE_EQ(p.mlp_up, 4 * h * h / 4);
  EXPECT_DOUBLE_EQ(p.mlp_down, 4 * h * h / 4);
  EXPECT_DOUBLE_EQ(p.dense(), 12 * h * h / 4 + 2 * h);
  EXPECT_DOUBLE_EQ(embedding_parameters_per_rank(spec.model, 4), 8000 * h);
  EXPECT_DOUBLE_EQ(output_parameters_per_rank(spec.model, 4, 1), 8000 * h);
}

}  // namespace
}  // namespace stepsim::workloads

namespace stepsim::workloads {
namespace {

const char* kKernels = "{device: h100, model: kernels}";

double gemm_flops(const OpCost& cost) {
  double f = 0;
  for (const kernels::Kernel& k : cost.kernels) {
    if (k.kind == kernels::KernelKind::kGemm || k.kind == kernels::KernelKind::kGroupedGemm)
      f += k.flops(kernels::KernelPass::kForward);
  }
  return f;
}

TEST(LayerKernels, GemmKernelsCarryTheOperationsFlops) {
  // The kernels are the same layer description as the costs: their GEMM FLOPs are the
  // operation's (dense layer, TP 4, SP).
  const auto spec =
      workload_of(kDense, "{tp: 4, sp: true}", "{seq_len: 2048, micro_batch: 2, global_batch: 2}");
  const LayerCosts c = layer_forward_costs(spec.model, micro_batch_shape(spec), 0);
  EXPECT_DOUBLE_EQ(gemm_flops(c.qkv), c.qkv.flops);
  EXPECT_DOUBLE_EQ(gemm_flops(c.attention_out), c.attention_out.flops);
  EXPECT_DOUBLE_EQ(gemm_flops(c.mlp_up), c.mlp_up.flops);
  EXPECT_DOUBLE_EQ(gemm_flops(c.mlp_down), c.mlp_down.flops);
  // The fused attention computes the causal half of the full-s^2 count the report uses.
  ASSERT_EQ(c.attention_core.kernels.size(), 1u);
  EXPECT_NEAR(c.attention_core.kernels[0].flops(kernels::KernelPass::kForward),
              c.attention_core.flops / 2, 0.001 * c.attention_core.flops);
  // Norms run on the sharded tokens: 1/t of T x h, read and written.
  ASSERT_EQ(c.norm.kernels.size(), 1u);
  EXPECT_DOUBLE_EQ(c.norm.kernels[0].forward_bytes, 2.0 * (4096 / 4) * h * e);
}

TEST(LayerKernels, KernelTimesOfALayerAddUpToItsOperations) {
  const auto spec =
      workload_of(kDense, "{tp: 1}", "{seq_len: 4096, micro_batch: 1, global_batch: 1}", kKernels);
  ASSERT_TRUE(spec.compute.kernels.has_value());
  const LayerCosts c = layer_forward_costs(spec.model, micro_batch_shape(spec), 0);
  const kernels::KernelTimer& t = *spec.compute.kernels;
  for (const OpCost* op : {&c.qkv, &c.attention_out, &c.mlp_up, &c.mlp_down}) {
    Time sum;
    for (const kernels::Kernel& k : op->kernels)
      sum += t.time(k, kernels::KernelPass::kForward).time;
    const Time launches = t.launch().gpu_per_kernel * static_cast<std::int64_t>(op->kernels.size());
    EXPECT_EQ(spec.compute.duration(OpName::kQkv, Phase::kForward, ComputeKind::kGemm, *op),
              std::max(sum + launches,
                       t.launch().cpu_per_kernel * static_cast<std::int64_t>(op->kernels.size())));
  }
}

TEST(LayerKernels, Fp8IsFasterOnlyWhereGemmsDominate) {
  // A wide MLP at a short sequence (GEMMs dominate) against a narrow one at a long sequence
  // (attention, in BF16 under FP8 training, dominates).
  auto layer_time = [](const char* model, const char* training) {
    const auto spec = workload_of(model, "{tp: 1}", training, kKernels);
    const LayerCosts c = layer_forward_costs(spec.model, micro_batch_shape(spec), 0);
    Time total;
    for (const OpCost* op :
         {&c.norm, &c.qkv, &c.attention_core, &c.attention_out, &c.mlp_up, &c.mlp_down})
      total += spec.compute.duration(OpName::kQkv, Phase::kForward, ComputeKind::kGemm, *op);
    return total.seconds();
  };
  const char* wide = "{layers: 2, hidden: 8192, heads: 64, vocab: 32000, ffn: 32768}";
  const char* narrow = "{layers: 2, hidden: 1024, heads: 8, vocab: 32000, ffn: 2048}";
  const double wide_gain =
      layer_time(wide, "{seq_len: 2048, micro_batch: 2, global_batch: 2}") /
      layer_time(wide, "{seq_len: 2048, micro_batch: 2, global_batch: 2, precision: fp8}");
  const double narrow_gain =
      layer_time(narrow, "{seq_len: 32768, micro_batch: 1, global_batch: 1}") /
      layer_time(narrow, "{seq_len: 32768, micro_batch: 1, global_batch: 1, precision: fp8}");
  EXPECT_GT(wide_gain, 1.4);
  EXPECT_LT(narrow_gain, 1.1);
  EXPECT_GT(narrow_gain, 0.9);
}

TEST(LayerKernels, TpCommOverlapSplitsTheProductsAsTransformerEngineDoes) {
  auto gemm = [](const OpCost& op, std::string_view name) {
    for (const kernels::Kernel& k : op.kernels)
      if (k.name == name) return k;
    ADD_FAILURE() << name;
    return kernels::Kernel{};
  };
  const char* training = "{seq_len: 4096, micro_batch: 1, global_batch: 1}";
  const auto on =
      workload_of(kDense, "{tp: 4, sp: true, tp_comm_overlap: true}", training, kKernels);
  const LayerCosts c = layer_forward_costs(on.model, micro_batch_shape(on), 0);
  // ring_exchange: tp slices for the column-parallel forwards and the row-parallel dgrads;
  // pipeline: 4 slices for the row-parallel forwards; bulk: whole.
  EXPECT_EQ(gemm(c.qkv, "qkv").forward_splits, 4);
  EXPECT_EQ(gemm(c.qkv, "qkv").dgrad_splits, 1);
  EXPECT_EQ(gemm(c.mlp_up, "mlp_fc1").forward_splits, 4);
  EXPECT_EQ(gemm(c.attention_out, "attention_proj").forward_splits, 4);
  EXPECT_EQ(gemm(c.attention_out, "attention_proj").dgrad_splits, 4);
  EXPECT_EQ(gemm(c.mlp_down, "mlp_fc2").dgrad_splits, 4);
  const auto tp8 =
      workload_of(kDense, "{tp: 8, sp: true, tp_comm_overlap: true}", training, kKernels);
  const LayerCosts c8 = layer_forward_costs(tp8.model, micro_batch_shape(tp8), 0);
  EXPECT_EQ(gemm(c8.qkv, "qkv").forward_splits, 8);
  EXPECT_EQ(gemm(c8.mlp_down, "mlp_fc2").forward_splits, 4);
  // Without the overlap every product is whole.
  const auto off = workload_of(kDense, "{tp: 4, sp: true}", training, kKernels);
  const LayerCosts o = layer_forward_costs(off.model, micro_batch_shape(off), 0);
  EXPECT_EQ(gemm(o.qkv, "qkv").forward_splits, 1);
  EXPECT_EQ(gemm(o.mlp_down, "mlp_fc2").dgrad_splits, 1);
}

}  // namespace
}  // namespace stepsim::workloads
