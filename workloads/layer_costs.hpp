// What each compute operation of a training step costs on one rank: its floating-point operations
// and its bytes of HBM traffic, for one micro-batch, from the model's shapes and the parallel
// layout, and the kernels it runs (the GEMMs with their shapes, the fused attention, the
// memory-bound kernels of the software modelled: Megatron-LM with Transformer Engine). The
// compute model (ComputeModel) turns a cost into a duration: from its kernels where the device
// has a kernel model, else from the roofline of its FLOPs and bytes.
//
// Kernels per operation (forward; docs/workloads.md, "Compute model"):
//   norm            LayerNorm or RMSNorm over the rank's (sharded) tokens
//   qkv             the QKV GEMM (MLA: the down- and up-projections), rotary embedding
//   attention_core  fused attention (or unfused: scores GEMM, scale-mask-softmax, dropout,
//                   context GEMM)
//   attention_out   the projection GEMM, bias-dropout-add (or the residual addition)
//   mlp_up          the up (and gate) GEMM, the activation (GeLU or SwiGLU)
//   mlp_down        the down GEMM, bias-dropout-add (or the residual addition)
//   router, shared_experts, experts (grouped GEMMs, the permutations), logits, loss (FP32
//   cross-entropy), embedding, optimizer (fused Adam)
// Under FP8 training each GEMM also casts its input (where no norm does) and its output
// gradient to FP8, with their transposes.
//
// Conventions (docs/workloads.md, "Models, parameters and FLOPs"): FLOPs are 2 per multiply-add of
// the matrix products; a backward pass costs twice its forward, FLOPs and bytes (backward_cost);
// attention scores count the full s x s product. Tensor-parallel ranks split the projections and
// MLPs (1/t each); under sequence parallelism norms, routers and experts see the rank's 1/t of the
// tokens. A GEMM of T tokens from `in` to `out` features with W weights moves
// (T x in + W + T x out) elements of the training precision.
#pragma once

#include <cstdint>

#include "workloads/model.hpp"
#include "workloads/op_cost.hpp"
#include "workloads/workload_spec.hpp"

namespace stepsim::workloads {

// One micro-batch as one rank sees it.
struct MicroBatchShape {
  std::int64_t seq_len = 0;         // s: the whole sequence (attention scores span it)
  std::int64_t tokens = 0;          // T = b x s / cp: tokens of the micro-batch on this rank
  std::int64_t sharded_tokens = 0;  // T / t under sequence parallelism, else T: the tokens that
                                    // norms, routers and experts process on this rank
  std::int64_t routed_tokens = 0;   // token-expert pairs sent to experts: sharded_tokens x top-k,
                                    // x capacity factor (rounded) when one is set
  int tp = 1;
  int ep = 1;
  std::int64_t element_bytes = 2;  // bytes per element of the training precision
  // For the kernels' shapes:
  std::int64_t micro_batch = 1;  // b: sequences of the micro-batch
  int cp = 1;
  bool ring_attention = false;  // cp > 1 with ring attention (the core runs cp blocks)
  bool fused_attention = true;  // ComputeModel::fused_attention
  bool fp8 = false;             // FP8 training: cast kernels beside the GEMMs
  // Transformer Engine's userbuffers overlap of the sequence-parallel collectives with the
  // GEMMs (parallelism.tp_comm_overlap, tp > 1): its default methods split the products.
  bool tp_comm_overlap = false;
};

MicroBatchShape micro_batch_shape(const WorkloadSpec& spec);

// Forward costs of the compute operations of one transformer layer for one micro-batch on one
// rank. Dense-MLP fields are zero in a MoE layer and expert fields zero in a dense one.
struct LayerCosts {
  OpCost norm;            // each of the layer's two norms
  OpCost qkv;             // query/key/value projections (column-parallel)
  OpCost attention_core;  // scores and weighted values over the whole sequence
  OpCost attention_out;   // output projection (row-parallel)
  OpCost mlp_up;          // up (and gate) projection (column-parallel)
  OpCost mlp_down;        // down projection (row-parallel)
  OpCost router;
  OpCost shared_experts;
  OpCost routed_experts;  // the rank's share of the routed work (grouped GEMM)
};

LayerCosts layer_forward_costs(const ModelSpec& model, const MicroBatchShape& shape,
                               std::int64_t layer);

// The input embedding's forward: a lookup of the rank's vocabulary rows (no FLOPs), reading and
// writing one activation of b x s' x h elements.
// The MLA up-projections of one layer (the query's from its latent, and keys and values from
// theirs: q_b_proj and kv_b_proj of DeepSeek-V3), part of LayerCosts::qkv, which
// recompute: norm_and_mla_up runs again in the backward. Zero without MLA.
OpCost mla_up_projection_cost(const ModelSpec& model, const MicroBatchShape& shape);

OpCost embedding_forward_cost(const ModelSpec& model, const MicroBatchShape& shape);

// The output layer's rows on one rank: the vocabulary split over tensor-parallel ranks, padded to
// a multiple of t.
std::int64_t vocabulary_rows_per_rank(const ModelSpec& model, int tp);

// Forward costs of the output layer on the last pipeline stage.
struct HeadCosts {
  OpCost final_norm;
  OpCost logits;  // the vocabulary-parallel output projection
  OpCost loss;    // softmax cross-entropy over the rank's logits (FP32), the same in backward
};

HeadCosts head_forward_costs(const ModelSpec& model, const MicroBatchShape& shape);

// The optimizer step (mixed-precision Adam) over `parameters` parameters: 10 FLOPs each; reads the
// gradient, the FP32 master weight and two FP32 moments, writes those three and the weight.
OpCost optimizer_step_cost(double parameters, std::int64_t element_bytes);

}  // namespace stepsim::workloads
