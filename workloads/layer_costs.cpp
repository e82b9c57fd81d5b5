#include "workloads/layer_costs.hpp"

#include <algorithm>
#include <cmath>
#include <string_view>
#include <vector>

namespace stepsim::workloads {

namespace {

using kernels::Kernel;
using kernels::KernelKind;
using kernels::MemoryKind;

double to_double(std::int64_t v) {
  return static_cast<double>(v);
}

// A GEMM of m tokens from k to n features (batch: groups of a grouped GEMM).
Kernel gemm_kernel(std::string_view name, std::int64_t m, std::int64_t k, std::int64_t n,
                   std::int64_t batch = 1) {
  Kernel g;
  g.name = name;
  g.kind = batch > 1 ? KernelKind::kGroupedGemm : KernelKind::kGemm;
  g.gemm = {m, n, k, batch};
  return g;
}

Kernel memory_kernel(std::string_view name, MemoryKind kind, double forward_bytes,
                     double backward_bytes) {
  Kernel k;
  k.name = name;
  k.kind = KernelKind::kMemory;
  k.memory = kind;
  k.forward_bytes = forward_bytes;
  k.backward_bytes = backward_bytes;
  return k;
}

// Under FP8 training (Transformer Engine) a GEMM's input is cast to FP8 with its transpose
// (read 2 bytes, write 1 + 1) unless a norm already wrote it in FP8, and in the backward the
// output gradient is (m x n, the same 4 bytes per element).
void add_fp8_casts(const MicroBatchShape& shape, const Kernel& gemm, bool cast_input,
                   std::vector<Kernel>& out) {
  if (!shape.fp8) return;
  const double batch = to_double(gemm.gemm.batch);
  const double input = cast_input ? 4.0 * batch * to_double(gemm.gemm.m * gemm.gemm.k) : 0.0;
  out.push_back(memory_kernel("fp8_cast", MemoryKind::kCast, input,
                              4.0 * batch * to_double(gemm.gemm.m * gemm.gemm.n)));
}

// The kernels of a linear layer: its GEMM and the FP8 casts.
std::vector<Kernel> linear_kernels(const MicroBatchShape& shape, Kernel gemm, bool cast_input) {
  std::vector<Kernel> v{gemm};
  add_fp8_casts(shape, gemm, cast_input, v);
  return v;
}

// The residual addition after a row-parallel layer, on the rank's sharded tokens: Megatron's
// fused bias-dropout-add (read the output and the residual, write the sum and a 1-byte mask;
// backward reads the gradient and the mask) or, without dropout, the addition alone (its
// backward passes the gradient through).
Kernel residual_kernel(const ModelSpec& model, const MicroBatchShape& shape) {
  const double elements = to_double(shape.sharded_tokens * model.hidden);
  const double e = to_double(shape.element_bytes);
  if (model.dropout > 0) {
    return memory_kernel("bias_dropout_add", MemoryKind::kDropout, elements * (3 * e + 1),
                         elements * (2 * e + 1));
  }
  return memory_kernel("residual_add", MemoryKind::kElementwise, elements * 3 * e, 0);
}

Kernel norm_kernel(const ModelSpec& model, const MicroBatchShape& shape) {
  const double elements = to_double(shape.sharded_tokens * model.hidden);
  const double e = to_double(shape.element_bytes);
  const bool layer_norm = model.norm == NormKind::kLayerNorm;
  // Forward reads x and writes y; backward reads x and dy and writes dx (the CSV's convention).
  return memory_kernel(layer_norm ? "layer_norm" : "rms_norm",
                       layer_norm ? MemoryKind::kLayerNorm : MemoryKind::kRmsNorm, 2 * elements * e,
                       3 * elements * e);
}

// The activation after an up projection of `width` features per token: GeLU reads and writes
// the width (backward: reads dy and x, writes dx); SwiGLU reads gate and up, writes one.
Kernel activation_kernel(bool gated, double tokens, double width, double e) {
  const double elements = tokens * width;
  if (gated) {
    return memory_kernel("swiglu", MemoryKind::kActivation, 3 * elements * e, 5 * elements * e);
  }
  return memory_kernel("bias_gelu", MemoryKind::kActivation, 2 * elements * e, 3 * elements * e);
}

// HBM bytes of a GEMM of `tokens` rows from `in` to `out` features with `weights` weights: it
// reads the input and the weights and writes the output.
double gemm_bytes(double tokens, double in, double out, double weights,
                  std::int64_t element_bytes) {
  return (tokens * in + weights + tokens * out) * to_double(element_bytes);
}

// A norm reads and writes the rank's share of the activation.
OpCost norm_forward_cost(const ModelSpec& model, const MicroBatchShape& shape) {
  const double hidden = to_double(model.hidden);
  return {5.0 * to_double(shape.sharded_tokens) * hidden,
          2.0 * to_double(shape.sharded_tokens * model.hidden * shape.element_bytes),
          {norm_kernel(model, shape)}};
}

// The attention core's kernels for one micro-batch on this rank (ring attention: one of its cp
// blocks, which the generator runs cp times).
std::vector<Kernel> attention_kernels(const ModelSpec& model, const MicroBatchShape& shape) {
  kernels::AttentionShape a;
  a.batch = shape.micro_batch;
  a.heads = model.heads / shape.tp;
  a.kv_heads = std::max<std::int64_t>(1, model.kv_heads / shape.tp);
  a.head_dim_qk =
      model.mla_enabled ? model.mla.qk_nope_head_dim + model.mla.qk_rope_head_dim : model.head_dim;
  a.head_dim_v = model.mla_enabled ? model.mla.v_head_dim : model.head_dim;
  a.causal = true;
  if (shape.ring_attention) {
    // Each block: the rank's queries against one rank's keys; under Megatron's load-balanced
    // split the cp blocks add up to 1/cp of the causal work, as cp causal blocks of s/cp do.
    a.seq_q = a.seq_kv = shape.seq_len / shape.cp;
  } else {
    // No CP, or Ulysses: the whole sequence with the heads split over cp.
    a.heads /= shape.cp;
    a.kv_heads = std::max<std::int64_t>(1, a.kv_heads / shape.cp);
    a.seq_q = a.seq_kv = shape.seq_len;
  }
  if (shape.fused_attention) {
    Kernel k;
    k.name = "fused_attention";
    k.kind = KernelKind::kAttention;
    k.attention = a;
    return {k};
  }
  // Unfused (Megatron-LM before fused attention): baddbmm scores, the fused scale-mask-softmax,
  // dropout on the probabilities, bmm with the values; each score element is 2 bytes.
  const std::int64_t groups = a.batch * a.heads;
  const double scores = to_double(groups * a.seq_q * a.seq_kv);
  const double e = to_double(shape.element_bytes);
  Kernel qk = gemm_kernel("attention_scores", a.seq_q, a.head_dim_qk, a.seq_kv, groups);
  qk.kind = KernelKind::kGemm;
  qk.bf16_only = true;
  Kernel pv = gemm_kernel("attention_context", a.seq_q, a.seq_kv, a.head_dim_v, groups);
  pv.kind = KernelKind::kGemm;
  pv.bf16_only = true;
  std::vector<Kernel> v{qk, memory_kernel("scale_mask_softmax", MemoryKind::kSoftmax,
                                          2 * scores * e, 3 * scores * e)};
  if (model.dropout > 0) {
    v.push_back(memory_kernel("attention_dropout", MemoryKind::kDropout, scores * (2 * e + 1),
                              scores * (2 * e + 1)));
  }
  v.push_back(pv);
  return v;
}

// Expert FFN weights per expert and hidden unit: up and down (and gate) projections.
double expert_weights_per_hidden_unit(const ModelSpec& model) {
  return to_double(model.moe.expert_ffn) * (model.gated_mlp ? 3.0 : 2.0);
}

// The QKV projection's kernels: one GEMM (MLA: the query and key/value down-projections, kept
// whole on every tensor-parallel rank as Megatron-LM does, and their up-projections, split),
// and the rotary embedding of queries and keys.
std::vector<Kernel> qkv_kernels(const ModelSpec& model, const MicroBatchShape& shape) {
  const std::int64_t T = shape.tokens;
  const int tp = shape.tp;
  const double e = to_double(shape.element_bytes);
  std::vector<Kernel> v;
  std::int64_t rotary_width = 0;
  if (model.mla_enabled) {
    const MlaShape& a = model.mla;
    const std::int64_t heads = model.heads / tp;
    if (a.q_lora_rank > 0) {
      v.push_back(gemm_kernel("mla_q_down", T, model.hidden, a.q_lora_rank));
      v.push_back(gemm_kernel("mla_q_up", T, a.q_lora_rank,
                              heads * (a.qk_nope_head_dim + a.qk_rope_head_dim)));
    } else {
      v.push_back(
          gemm_kernel("mla_q", T, model.hidden, heads * (a.qk_nope_head_dim + a.qk_rope_head_dim)));
    }
    v.push_back(gemm_kernel("mla_kv_down", T, model.hidden, a.kv_lora_rank + a.qk_rope_head_dim));
    v.push_back(
        gemm_kernel("mla_kv_up", T, a.kv_lora_rank, heads * (a.qk_nope_head_dim + a.v_head_dim)));
    rotary_width = (heads + 1) * a.qk_rope_head_dim;
  } else {
    v = linear_kernels(
        shape, gemm_kernel("qkv", T, model.hidden, (model.q_width() + 2 * model.kv_width()) / tp),
        false);
    rotary_width = (model.q_width() + model.kv_width()) / tp;
  }
  if (model.position == PositionKind::kRotary) {
    const double bytes = 2.0 * to_double(T * rotary_width) * e;
    v.push_back(memory_kernel("rotary", MemoryKind::kElementwise, bytes, bytes));
  }
  return v;
}

// Transformer Engine's userbuffers overlap with its default methods (initialize_ub in
// transformer_engine/pytorch/module/base.py): the column-parallel forwards (qkv_fprop,
// fc1_fprop) and the row-parallel dgrads (proj_dgrad, fc2_dgrad) use "ring_exchange", one GEMM
// per chunk of the all-gathered tokens (num_splits = tp); the row-parallel forwards (proj_fprop,
// fc2_fprop) use "pipeline" with num_splits 4, each slice reduce-scattered as the next computes;
// the other dgrads and the wgrads overlap in "bulk" (the GEMM whole).
void split_for_tp_overlap(int tp, LayerCosts& costs) {
  auto split = [](OpCost& op, std::string_view name, int forward, int dgrad) {
    for (Kernel& k : op.kernels) {
      if (k.kind == KernelKind::kGemm && k.name == name) {
        k.forward_splits = forward;
        k.dgrad_splits = dgrad;
      }
    }
  };
  split(costs.qkv, "qkv", tp, 1);
  split(costs.attention_out, "attention_proj", 4, tp);
  split(costs.mlp_up, "mlp_fc1", tp, 1);
  split(costs.mlp_down, "mlp_fc2", 4, tp);
}

// The tensor-parallel pieces: attention, and the MLP of a dense layer. Each rank holds 1/t of
// the weights and computes on all T tokens.
void add_tensor_parallel_costs(const ModelSpec& model, const MicroBatchShape& shape,
                               const LayerFlops& flops, bool dense_mlp, LayerCosts& costs) {
  const double tokens = to_double(shape.tokens);
  const double hidden = to_double(model.hidden);
  const double tp = shape.tp;
  const std::int64_t e = shape.element_bytes;
  // flops.qkv is 2 x the projection's weights per token (as for every GEMM below).
  costs.qkv = {tokens * flops.qkv / tp,
               gemm_bytes(tokens, hidden, to_double(model.q_width() + 2 * model.kv_width()) / tp,
                          flops.qkv / 2.0 / tp, e)};
  costs.qkv.kernels = qkv_kernels(model, shape);
  // The fused attention kernel reads Q, K and V and writes the output; the output is read again
  // by the projection, so the output width counts twice.
  const double width =
      to_double(model.q_width() + model.kv_width() + 2 * model.attn_out_width()) / tp;
  costs.attention_core = {tokens * flops.attention_core / tp, tokens * width * to_double(e),
                          attention_kernels(model, shape)};
  costs.attention_out = {tokens * flops.attention_out / tp,
                         gemm_bytes(tokens, to_double(model.attn_out_width()) / tp, hidden,
                                    flops.attention_out / 2.0 / tp, e)};
  costs.attention_out.kernels = linear_kernels(
      shape,
      gemm_kernel("attention_proj", shape.tokens, model.attn_out_width() / shape.tp, model.hidden),
      true);
  costs.attention_out.kernels.push_back(residual_kernel(model, shape));
  if (!dense_mlp) return;
  costs.mlp_up = {
      tokens * flops.mlp_up / tp,
      gemm_bytes(tokens, hidden, flops.mlp_up / 2.0 / hidden / tp, flops.mlp_up / 2.0 / tp, e)};
  const std::int64_t ffn = model.ffn / shape.tp;
  costs.mlp_up.kernels = linear_kernels(
      shape, gemm_kernel("mlp_fc1", shape.tokens, model.hidden, ffn * (model.gated_mlp ? 2 : 1)),
      false);
  costs.mlp_up.kernels.push_back(
      activation_kernel(model.gated_mlp, tokens, to_double(ffn), to_double(e)));
  costs.mlp_down = {tokens * flops.mlp_down / tp, gemm_bytes(tokens, to_double(model.ffn) / tp,
                                                             hidden, flops.mlp_down / 2.0 / tp, e)};
  costs.mlp_down.kernels =
      linear_kernels(shape, gemm_kernel("mlp_fc2", shape.tokens, ffn, model.hidden), true);
  costs.mlp_down.kernels.push_back(residual_kernel(model, shape));
  if (shape.tp_comm_overlap) split_for_tp_overlap(shape.tp, costs);
}

// Experts are not tensor-parallel: the router and the shared experts process the rank's sharded
// tokens; the routed experts process the routed token-expert pairs with the rank's experts.
void add_moe_costs(const ModelSpec& model, const MicroBatchShape& shape, const LayerFlops& flops,
                   LayerCosts& costs) {
  const double tokens = to_double(shape.sharded_tokens);
  const double hidden = to_double(model.hidden);
  const double experts = to_double(model.moe.experts);
  const double per_hidden_unit = expert_weights_per_hidden_unit(model);
  const std::int64_t e = shape.element_bytes;
  costs.router = {tokens * flops.router, gemm_bytes(tokens, hidden, experts, hidden * experts, e)};
  costs.router.kernels = {
      gemm_kernel("router", shape.sharded_tokens, model.hidden, model.moe.experts)};
  costs.shared_experts = {
      tokens * flops.shared_experts,
      to_double(model.moe.shared_experts) *
          gemm_bytes(tokens, hidden, to_double(model.moe.expert_ffn), hidden * per_hidden_unit, e)};
  const std::int64_t gate = model.gated_mlp ? 2 : 1;
  if (model.moe.shared_experts > 0) {
    // The shared experts as one MLP of their summed width.
    const std::int64_t width = model.moe.shared_experts * model.moe.expert_ffn;
    std::vector<Kernel>& k = costs.shared_experts.kernels;
    k = linear_kernels(
        shape, gemm_kernel("shared_fc1", shape.sharded_tokens, model.hidden, width * gate), true);
    k.push_back(activation_kernel(model.gated_mlp, tokens, to_double(width), to_double(e)));
    for (const Kernel& d : linear_kernels(
             shape, gemm_kernel("shared_fc2", shape.sharded_tokens, width, model.hidden), true))
      k.push_back(d);
  }
  const double routed = to_double(shape.routed_tokens);
  costs.routed_experts = {
      routed * flops.routed_experts / to_double(model.moe.top_k),
      gemm_bytes(routed, hidden, to_double(model.moe.expert_ffn),
                 to_double(model.moe.experts / shape.ep) * hidden * per_hidden_unit, e)};
  // The routed token-expert pairs the rank's experts receive (as many as it sends, on average),
  // equal per expert: one grouped GEMM per projection, with the permutation into expert order
  // and back (each reads and writes the pairs' hidden states).
  const std::int64_t local = std::max<std::int64_t>(1, model.moe.experts / shape.ep);
  const std::int64_t per_expert = (shape.routed_tokens + local - 1) / local;
  if (per_expert > 0) {
    std::vector<Kernel>& k = costs.routed_experts.kernels;
    const double moved = 2.0 * routed * hidden * to_double(e);
    k.push_back(memory_kernel("permute", MemoryKind::kElementwise, moved, moved));
    for (const Kernel& g : linear_kernels(shape,
                                          gemm_kernel("experts_fc1", per_expert, model.hidden,
                                                      model.moe.expert_ffn * gate, local),
                                          true))
      k.push_back(g);
    k.push_back(
        activation_kernel(model.gated_mlp, routed, to_double(model.moe.expert_ffn), to_double(e)));
    for (const Kernel& g : linear_kernels(
             shape,
             gemm_kernel("experts_fc2", per_expert, model.moe.expert_ffn, model.hidden, local),
             true))
      k.push_back(g);
    k.push_back(memory_kernel("unpermute", MemoryKind::kElementwise, moved, moved));
  }
}

}  // namespace

MicroBatchShape micro_batch_shape(const WorkloadSpec& spec) {
  const ModelSpec& model = spec.model;
  const ParallelLayout& layout = spec.parallel;
  MicroBatchShape shape;
  shape.seq_len = spec.training.seq_len;
  shape.tokens = spec.training.micro_batch * (spec.training.seq_len / layout.cp);
  shape.sharded_tokens = layout.sequence_parallel() ? shape.tokens / layout.tp : shape.tokens;
  const std::int64_t pairs = shape.sharded_tokens * (model.moe_enabled ? model.moe.top_k : 0);
  // A capacity factor pads every expert to its capacity: the padding is computed and sent.
  shape.routed_tokens = model.moe.capacity_factor > 0
                            ? std::llround(to_double(pairs) * model.moe.capacity_factor)
                            : pairs;
  shape.tp = layout.tp;
  shape.ep = layout.ep;
  shape.element_bytes = element_bytes(spec.training.precision);
  shape.micro_batch = spec.training.micro_batch;
  shape.cp = layout.cp;
  shape.ring_attention = layout.cp > 1 && layout.cp_mode != CpMode::kUlysses;
  shape.fused_attention = spec.compute.fused_attention;
  shape.fp8 = spec.training.precision == Precision::kFp8;
  shape.tp_comm_overlap = layout.tp_comm_overlap && layout.sequence_parallel() && layout.tp > 1;
  return shape;
}

LayerCosts layer_forward_costs(const ModelSpec& model, const MicroBatchShape& shape,
                               std::int64_t layer) {
  const LayerFlops flops = layer_flops_per_token(model, layer, shape.seq_len);
  LayerCosts costs;
  costs.norm = norm_forward_cost(model, shape);
  const bool moe = model.is_moe_layer(layer);
  add_tensor_parallel_costs(model, shape, flops, !moe, costs);
  if (moe) add_moe_costs(model, shape, flops, costs);
  return costs;
}

OpCost mla_up_projection_cost(const ModelSpec& model, const MicroBatchShape& shape) {
  if (!model.mla_enabled) return {};
  const MlaShape& a = model.mla;
  const double heads = to_double(model.heads);
  const double q_out = heads * to_double(a.qk_nope_head_dim + a.qk_rope_head_dim);
  const double kv_out = heads * to_double(a.qk_nope_head_dim + a.v_head_dim);
  const double q_weights = to_double(a.q_lora_rank) * q_out;  // 0 without a query latent
  const double kv_weights = to_double(a.kv_lora_rank) * kv_out;
  const double tokens = to_double(shape.tokens);
  const double tp = shape.tp;
  const std::int64_t e = shape.element_bytes;
  OpCost cost{2.0 * tokens * (q_weights + kv_weights) / tp,
              (a.q_lora_rank > 0
                   ? gemm_bytes(tokens, to_double(a.q_lora_rank), q_out / tp, q_weights / tp, e)
                   : 0.0) +
                  gemm_bytes(tokens, to_double(a.kv_lora_rank), kv_out / tp, kv_weights / tp, e)};
  const std::int64_t rank_heads = model.heads / shape.tp;
  if (a.q_lora_rank > 0) {
    cost.kernels.push_back(gemm_kernel("mla_q_up", shape.tokens, a.q_lora_rank,
                                       rank_heads * (a.qk_nope_head_dim + a.qk_rope_head_dim)));
  }
  cost.kernels.push_back(gemm_kernel("mla_kv_up", shape.tokens, a.kv_lora_rank,
                                     rank_heads * (a.qk_nope_head_dim + a.v_head_dim)));
  return cost;
}

OpCost embedding_forward_cost(const ModelSpec& model, const MicroBatchShape& shape) {
  const double bytes = 2.0 * to_double(shape.tokens * model.hidden * shape.element_bytes);
  // Backward: the gradient rows are read and scattered into the rank's dense table gradient.
  const double table =
      to_double(vocabulary_rows_per_rank(model, shape.tp) * model.hidden * shape.element_bytes);
  return {0.0, bytes, {memory_kernel("embedding", MemoryKind::kEmbedding, bytes, bytes + table)}};
}

std::int64_t vocabulary_rows_per_rank(const ModelSpec& model, int tp) {
  return (model.vocab + tp - 1) / tp;
}

HeadCosts head_forward_costs(const ModelSpec& model, const MicroBatchShape& shape) {
  const double tokens = to_double(shape.tokens);
  const double hidden = to_double(model.hidden);
  const double rows = to_double(vocabulary_rows_per_rank(model, shape.tp));
  HeadCosts costs;
  costs.final_norm = norm_forward_cost(model, shape);
  costs.logits = {tokens * output_flops_per_token(model) / shape.tp,
                  gemm_bytes(tokens, hidden, rows, rows * hidden, shape.element_bytes)};
  costs.logits.kernels = linear_kernels(
      shape,
      gemm_kernel("logits", shape.tokens, model.hidden, vocabulary_rows_per_rank(model, shape.tp)),
      false);
  // The logits are read and written in FP32 (4 bytes) by the fused softmax cross-entropy. Its
  // kernels' bytes are the BF16 logits read and their gradient written (2 bytes each, one per
  // pass), at the fused cross-entropy's measured rate.
  costs.loss = {5.0 * tokens * rows, 2.0 * tokens * rows * 4.0};
  costs.loss.kernels = {memory_kernel("cross_entropy", MemoryKind::kCrossEntropy,
                                      2.0 * tokens * rows, 2.0 * tokens * rows)};
  return costs;
}

OpCost optimizer_step_cost(double parameters, std::int64_t element_bytes) {
  const double e = to_double(element_bytes);
  const double bytes = parameters * (e + 12.0 + 12.0 + e);
  return {10.0 * parameters, bytes, {memory_kernel("adam", MemoryKind::kOptimizer, bytes, 0)}};
}

}  // namespace stepsim::workloads
