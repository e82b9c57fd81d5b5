#include "workloads/layer_costs.hpp"

#include <cmath>

namespace stepsim::workloads {

namespace {

double to_double(std::int64_t v) {
  return static_cast<double>(v);
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
          2.0 * to_double(shape.sharded_tokens * model.hidden * shape.element_bytes)};
}

// Expert FFN weights per expert and hidden unit: up and down (and gate) projections.
double expert_weights_per_hidden_unit(const ModelSpec& model) {
  return to_double(model.moe.expert_ffn) * (model.gated_mlp ? 3.0 : 2.0);
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
  // The fused attention kernel reads Q, K and V and writes the output; the output is read again
  // by the projection, so the output width counts twice.
  const double width =
      to_double(model.q_width() + model.kv_width() + 2 * model.attn_out_width()) / tp;
  costs.attention_core = {tokens * flops.attention_core / tp, tokens * width * to_double(e)};
  costs.attention_out = {tokens * flops.attention_out / tp,
                         gemm_bytes(tokens, to_double(model.attn_out_width()) / tp, hidden,
                                    flops.attention_out / 2.0 / tp, e)};
  if (!dense_mlp) return;
  costs.mlp_up = {
      tokens * flops.mlp_up / tp,
      gemm_bytes(tokens, hidden, flops.mlp_up / 2.0 / hidden / tp, flops.mlp_up / 2.0 / tp, e)};
  costs.mlp_down = {tokens * flops.mlp_down / tp, gemm_bytes(tokens, to_double(model.ffn) / tp,
                                                             hidden, flops.mlp_down / 2.0 / tp, e)};
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
  costs.shared_experts = {
      tokens * flops.shared_experts,
      to_double(model.moe.shared_experts) *
          gemm_bytes(tokens, hidden, to_double(model.moe.expert_ffn), hidden * per_hidden_unit, e)};
  const double routed = to_double(shape.routed_tokens);
  costs.routed_experts = {
      routed * flops.routed_experts / to_double(model.moe.top_k),
      gemm_bytes(routed, hidden, to_double(model.moe.expert_ffn),
                 to_double(model.moe.experts / shape.ep) * hidden * per_hidden_unit, e)};
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
  return {2.0 * tokens * (q_weights + kv_weights) / tp,
          (a.q_lora_rank > 0
               ? gemm_bytes(tokens, to_double(a.q_lora_rank), q_out / tp, q_weights / tp, e)
               : 0.0) +
              gemm_bytes(tokens, to_double(a.kv_lora_rank), kv_out / tp, kv_weights / tp, e)};
}

OpCost embedding_forward_cost(const ModelSpec& model, const MicroBatchShape& shape) {
  return {0.0, 2.0 * to_double(shape.tokens * model.hidden * shape.element_bytes)};
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
  // The logits are read and written in FP32 (4 bytes) by the fused softmax cross-entropy.
  costs.loss = {5.0 * tokens * rows, 2.0 * tokens * rows * 4.0};
  return costs;
}

OpCost optimizer_step_cost(double parameters, std::int64_t element_bytes) {
  const double e = to_double(element_bytes);
  return {10.0 * parameters, parameters * (e + 12.0 + 12.0 + e)};
}

}  // namespace stepsim::workloads
