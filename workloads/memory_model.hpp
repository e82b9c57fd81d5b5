// Device memory of one rank at the peak of a training step: parameters, gradients, optimizer
// states (by ZeRO stage) and activations (by recomputation mode, Korthikanti et al. 2022,
// "Reducing Activation Recomputation in Large Transformer Models").
//
//  - Mixed-precision Adam keeps, per parameter, a 16-bit weight (2 bytes), a gradient in the
//    precision it is reduced in (training.grad_reduce_dtype: the weights' by default, 2; FP32
//    main grads, 4, as Megatron-LM's "6 + 12 / DP" with its distributed optimizer,
//    megatron/training/theoretical_memory_usage.py) and FP32 master weight, momentum and
//    variance (12): 2 + 2 + 12 bytes (FP32 training: 4 + 4 + 8). ZeRO-1 shards the optimizer
//    states, ZeRO-2 also the gradients, ZeRO-3 also the weights, over the data-parallel group
//    (dense parameters: dp x cp ranks; experts: edp ranks).
//  - Activations per layer and micro-batch (16-bit, local sequence s = seq_len / cp):
//    sbh(34 + 5as/h) without tensor parallelism; sbh(10 + 24/t + 5as/(ht)) with TP;
//    sbh(34/t + 5as/(ht)) with TP + SP; selective recomputation drops the 5as/h term; full
//    recomputation keeps only the layer input, 2sbh (2sbh/t with SP). The 34 generalizes to
//    other MLP shapes (gated, MoE) term by term (docs/workloads.md). The number of micro-batches
//    whose activations are alive at once follows the stage's schedule (p - s for 1F1B's first
//    stages, m for GPipe, the interleaved warm-up otherwise). The last stage adds one micro-
//    batch's FP32 logits (4 b s V / t). Under DualPipe every rank holds two stages (s and
//    p - 1 - s): twice the parameters, and the logits on the first and the last rank.
#pragma once

#include <string>
#include <vector>

#include "sim/common/units.hpp"
#include "workloads/workload_spec.hpp"

namespace stepsim::workloads {

// Parameters held by one rank of a pipeline stage, before any ZeRO sharding.
struct RankParameters {
  double dense = 0;   // tensor-parallel share of attention, MLPs, norms, embeddings, router
  double expert = 0;  // the rank's routed experts
  double total() const { return dense + expert; }
};

RankParameters rank_parameters(const WorkloadSpec& spec, int stage);

struct MemoryEstimate {
  int stage = 0;
  Bytes parameters;
  Bytes gradients;
  Bytes optimizer_states;
  Bytes activations;
  Bytes total;
  Bytes capacity;                           // the device's HBM
  double peak_in_flight_micro_batches = 0;  // activations alive at the peak, in micro-batches
  bool exceeds_capacity = false;
  std::string warning;  // for people; empty when the rank fits
};

// One estimate per pipeline stage (all ranks of a stage need the same memory).
std::vector<MemoryEstimate> estimate_memory(const WorkloadSpec& spec);

// Activation bytes of one layer for one micro-batch on one rank.
double layer_activation_bytes(const WorkloadSpec& spec, std::int64_t layer);

}  // namespace stepsim::workloads
