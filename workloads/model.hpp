// A decoder-only transformer as the workload generator sees it: the shapes that decide parameter
// counts, FLOPs, activation sizes and the bytes of every collective. Dense layers (multi-head,
// grouped-query or multi-query attention; a plain or gated MLP), mixture-of-experts layers (routed
// and shared experts, top-k routing, dense first layers) and DeepSeek's multi-head latent
// attention.
//
// Counting conventions (docs/workloads.md, "Parameters and FLOPs"):
//  - parameters are counted as in the checkpoints (config.json on Hugging Face): weights, biases
//  and
//    norm scales; an untied output projection counts separately from the input embedding;
//  - FLOPs are multiply-adds x 2 of the matrix products, per token, forward only; backward is twice
//    the forward. Attention scores count the full s x s product (no causal halving), the convention
//    of Megatron-LM's and Korthikanti et al.'s formulas; the input embedding is a lookup (0 FLOPs).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace stepsim::workloads {

enum class NormKind : std::uint8_t { kLayerNorm, kRmsNorm };
enum class PositionKind : std::uint8_t { kRotary, kLearned };

// DeepSeek-V2/V3 multi-head latent attention: queries and keys/values go through low-rank latent
// projections; each head has a non-positional part and a rotary part of its query/key.
struct MlaShape {
  std::int64_t q_lora_rank = 0;  // 0: queries are projected directly from the hidden state
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_nope_head_dim = 0;
  std::int64_t qk_rope_head_dim = 0;
  std::int64_t v_head_dim = 0;
};

// How a MoE layer's dispatch and combine move tokens between nodes (docs/workloads.md):
// kDirect: one transfer per (sender, expert rank) pair; kRelayed: DeepSeek-V3's path (arXiv
// 2412.19437 section 3.2.2), once over the scale-out network to the rank of the sender's in-node
// index on each node the token reaches, then over the scale-up network to its experts.
enum class ExpertDispatch : std::uint8_t { kDirect, kRelayed };

// Mixture of experts in the MLP of every layer except the first `dense_layers`.
struct MoeShape {
  std::int64_t experts = 0;         // routed experts per MoE layer
  std::int64_t top_k = 0;           // routed experts per token
  std::int64_t shared_experts = 0;  // experts every token goes through
  std::int64_t expert_ffn = 0;      // intermediate size of one expert
  std::int64_t dense_layers = 0;    // the first layers keep a dense MLP of size `ffn`
  double capacity_factor = 0.0;     // 0: dropless (no capacity, no padding)
  // Node-limited routing (DeepSeek-V3's M): each token's experts lie on at most this many of the
  // scale-up domains the expert-parallel group spans; 0: no limit (expert_routing.hpp).
  std::int64_t max_nodes_per_token = 0;
  ExpertDispatch dispatch = ExpertDispatch::kDirect;
  // A measured per-expert load (tokens, or any non-negative weights; one per routed expert): the
  // share of the routed tokens each expert receives, in place of training.routing_skew's Zipf
  // law. Empty: that law (uniform at skew 0).
  std::vector<double> expert_load;
};

struct ModelSpec {
  std::string name;
  std::string source;  // where the figures come from (for people)
  std::int64_t layers = 0;
  std::int64_t hidden = 0;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;  // == heads: MHA; 1: MQA; in between: GQA
  std::int64_t head_dim = 0;  // usually hidden / heads
  std::int64_t ffn = 0;       // dense MLP intermediate size
  bool gated_mlp = false;     // SwiGLU: gate and up projections
  std::int64_t vocab = 0;
  bool tied_embeddings = false;
  bool bias = false;  // linear layers carry biases (GPT-2/3)
  // Dropout probability of the hidden states (the fused bias-dropout-add after attention and
  // the MLP) and of the unfused attention's probabilities; 0: none (Llama, DeepSeek).
  double dropout = 0.0;
  NormKind norm = NormKind::kRmsNorm;
  PositionKind position = PositionKind::kRotary;
  std::int64_t max_positions = 0;  // rows of a learned position table
  bool mla_enabled = false;
  MlaShape mla;
  bool moe_enabled = false;
  MoeShape moe;

  bool is_moe_layer(std::int64_t layer) const { return moe_enabled && layer >= moe.dense_layers; }
  std::int64_t moe_layers() const { return moe_enabled ? layers - moe.dense_layers : 0; }
  std::int64_t dense_layers() const { return layers - moe_layers(); }
  // Width of all query heads and of the attention output (heads x value head size).
  std::int64_t q_width() const;
  std::int64_t attn_out_width() const;
  std::int64_t kv_width() const;  // key width of all KV heads (GQA: kv_heads x head_dim)
};

// Parameter counts by part, in parameters (not bytes).
struct ParameterCount {
  double attention = 0;  // one layer's attention block (projections, latent norms)
  double norms = 0;      // one layer's norms
  double dense_mlp = 0;  // one dense MLP
  double expert = 0;     // one routed or shared expert
  double router = 0;     // one MoE router
  double embedding = 0;  // input embedding (+ learned positions)
  double output = 0;     // untied output projection (0 when tied)
  double final_norm = 0;
  double total = 0;
  double active = 0;  // used by one token: top-k routed + shared experts, embeddings included
  double dense_layer() const { return attention + norms + dense_mlp; }
};

ParameterCount count_parameters(const ModelSpec& model);

// Forward FLOPs per token of each operation of one layer, for sequences of `seq_len` tokens; the
// generator divides them among tensor-parallel ranks. MLP fields are zero in a MoE layer and
// expert fields are zero in a dense one.
struct LayerFlops {
  double qkv = 0;             // query/key/value projections (MLA: the latent projections too)
  double attention_core = 0;  // QK^T and attention x V over the whole sequence
  double attention_out = 0;   // output projection
  double mlp_up = 0;          // up (and gate) projection
  double mlp_down = 0;
  double router = 0;
  double routed_experts = 0;  // top-k experts of one token
  double shared_experts = 0;
  double matmul() const {
    return qkv + attention_out + mlp_up + mlp_down + router + routed_experts + shared_experts;
  }
};

LayerFlops layer_flops_per_token(const ModelSpec& model, std::int64_t layer, std::int64_t seq_len);
// The output projection (logits): 2 * hidden * vocab per token.
double output_flops_per_token(const ModelSpec& model);

// Forward FLOPs per token for a sequence of `seq_len` tokens, summed over the model.
struct TokenFlops {
  double matmul = 0;     // projections, MLPs, experts, router, output layer
  double attention = 0;  // scores and weighted values: 2*s*(q width) + 2*s*(value width) per layer
  double total() const { return matmul + attention; }
};

TokenFlops forward_flops_per_token(const ModelSpec& model, std::int64_t seq_len);

}  // namespace stepsim::workloads
