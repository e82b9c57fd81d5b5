#include "workloads/model.hpp"

namespace stepsim::workloads {

std::int64_t ModelSpec::q_width() const {
  if (mla_enabled) return heads * (mla.qk_nope_head_dim + mla.qk_rope_head_dim);
  return heads * head_dim;
}

std::int64_t ModelSpec::attn_out_width() const {
  if (mla_enabled) return heads * mla.v_head_dim;
  return heads * head_dim;
}

std::int64_t ModelSpec::kv_width() const {
  if (mla_enabled) return heads * (mla.qk_nope_head_dim + mla.qk_rope_head_dim);
  return kv_heads * head_dim;
}

namespace {

double d(std::int64_t v) {
  return static_cast<double>(v);
}

// Weights of the query/key/value projections (no biases, no norms): 2x this is the forward FLOPs
// of the QKV operation per token.
double qkv_weights(const ModelSpec& m) {
  const double h = d(m.hidden);
  if (!m.mla_enabled) return h * d(m.q_width() + 2 * m.kv_width());
  const MlaShape& a = m.mla;
  const double qk_head = d(a.qk_nope_head_dim + a.qk_rope_head_dim);
  const double q = a.q_lora_rank > 0
                       ? h * d(a.q_lora_rank) + d(a.q_lora_rank) * d(m.heads) * qk_head
                       : h * d(m.heads) * qk_head;
  // The shared rotary key is projected with the latent (kv_a_proj_with_mqa); kv_b expands the
  // latent into per-head non-positional keys and values.
  const double kv = h * d(a.kv_lora_rank + a.qk_rope_head_dim) +
                    d(a.kv_lora_rank) * d(m.heads) * d(a.qk_nope_head_dim + a.v_head_dim);
  return q + kv;
}

double mlp_weights(const ModelSpec& m, std::int64_t ffn) {
  return d(m.hidden) * d(ffn) * (m.gated_mlp ? 3.0 : 2.0);
}

double norm_params(const ModelSpec& m) {
  return m.norm == NormKind::kLayerNorm ? 2.0 * d(m.hidden) : d(m.hidden);
}

}  // namespace

ParameterCount count_parameters(const ModelSpec& m) {
  ParameterCount c;
  const double h = d(m.hidden);
  c.attention = qkv_weights(m) + d(m.attn_out_width()) * h;
  if (m.bias) c.attention += d(m.q_width() + 2 * m.kv_width()) + h;
  if (m.mla_enabled) {
    // The latent norms (q_a_layernorm, kv_a_layernorm).
    c.attention += d(m.mla.q_lora_rank + m.mla.kv_lora_rank);
  }
  c.norms = 2.0 * norm_params(m);
  c.dense_mlp = mlp_weights(m, m.ffn) + (m.bias ? d(m.ffn) + h : 0.0);
  if (m.moe_enabled) {
    c.expert = mlp_weights(m, m.moe.expert_ffn) + (m.bias ? d(m.moe.expert_ffn) + h : 0.0);
    c.router = h * d(m.moe.experts);
  }
  c.embedding = d(m.vocab) * h;
  if (m.position == PositionKind::kLearned) c.embedding += d(m.max_positions) * h;
  c.output = m.tied_embeddings ? 0.0 : d(m.vocab) * h;
  c.final_norm = norm_params(m);

  const double dense_layers = d(m.dense_layers());
  const double moe_layers = d(m.moe_layers());
  const double moe_common = c.attention + c.norms + c.router;
  const double outside = c.embedding + c.output + c.final_norm;
  c.total = dense_layers * c.dense_layer() +
            moe_layers * (moe_common + d(m.moe.experts + m.moe.shared_experts) * c.expert) +
            outside;
  c.active = dense_layers * c.dense_layer() +
             moe_layers * (moe_common + d(m.moe.top_k + m.moe.shared_experts) * c.expert) + outside;
  return c;
}

LayerFlops layer_flops_per_token(const ModelSpec& m, std::int64_t layer, std::int64_t seq_len) {
  LayerFlops f;
  const double h = d(m.hidden);
  const double s = d(seq_len);
  f.qkv = 2.0 * qkv_weights(m);
  const double v_width = d(m.attn_out_width());
  f.attention_core = 2.0 * s * d(m.q_width()) + 2.0 * s * v_width;
  f.attention_out = 2.0 * v_width * h;
  if (m.is_moe_layer(layer)) {
    f.router = 2.0 * h * d(m.moe.experts);
    f.routed_experts = 2.0 * d(m.moe.top_k) * mlp_weights(m, m.moe.expert_ffn);
    f.shared_experts = 2.0 * d(m.moe.shared_experts) * mlp_weights(m, m.moe.expert_ffn);
  } else {
    f.mlp_up = 2.0 * h * d(m.ffn) * (m.gated_mlp ? 2.0 : 1.0);
    f.mlp_down = 2.0 * d(m.ffn) * h;
  }
  return f;
}

double output_flops_per_token(const ModelSpec& m) {
  return 2.0 * d(m.hidden) * d(m.vocab);
}

TokenFlops forward_flops_per_token(const ModelSpec& m, std::int64_t seq_len) {
  TokenFlops t;
  for (std::int64_t layer = 0; layer < m.layers; ++layer) {
    const LayerFlops f = layer_flops_per_token(m, layer, seq_len);
    t.matmul += f.matmul();
    t.attention += f.attention_core;
  }
  t.matmul += output_flops_per_token(m);
  return t;
}

}  // namespace stepsim::workloads
