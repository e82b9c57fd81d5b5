// What a scenario's `serving:` section says about an inference deployment (docs/serving.md): the
// model and device (the scenario's `model:` and `compute:`, as for training), the precision of
// weights and of the KV cache, and the pools of accelerators that run prefill (the prompt, once
// per request) and decode (one token per sequence per step), each with its tensor- and
// expert-parallel layout, its batch and its sequence length.
//
// A pass of a pool is the forward pass of the training generator (generate_forward_program) on
// a single-stage layout: tp ranks per replica, replicas = accelerators / tp, experts split over
// ep ranks. Decode at batch B with context C: the GEMMs at M = B, each attention core reading
// B x C tokens of the KV cache; prefill at batch B with prompt P: the GEMMs at M = B x P, the
// attention over the prompt, the KV cache written, and logits for the last token of each prompt.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sim/common/config.hpp"
#include "sim/common/units.hpp"
#include "workloads/compute_model.hpp"
#include "workloads/model.hpp"
#include "workloads/step_generator.hpp"
#include "workloads/workload_spec.hpp"

namespace stepsim::workloads {

enum class ServingPhase : std::uint8_t { kPrefill, kDecode };

std::string_view to_string(ServingPhase phase);

// One pool of accelerators serving one phase. This slice simulates each pool on the first
// `accelerators` accelerators of the topology (docs/serving.md, "What is not modelled yet").
struct ServingPool {
  int accelerators = 0;  // 0 until resolve_serving_pools: all of the topology's
  int tp = 1;            // tensor-parallel ranks of one replica
  int ep = 1;            // expert-parallel ranks (MoE models)
  // Decode: sequences per step on each replica; prefill: prompts per pass on each replica.
  std::int64_t batch = 1;
  // Decode: KV tokens per sequence (the context each new token attends to); prefill: the prompt.
  std::int64_t tokens = 0;
  std::string location;  // "file:line:col" of the pool's section, for messages

  int replicas() const { return accelerators / tp; }
};

struct ServingSpec {
  ModelSpec model;
  // The scenario's compute model with memory_efficiency set from `serving.hbm_efficiency`.
  ComputeModel compute;
  Precision precision = Precision::kBf16;  // weights and activations
  Precision kv_cache = Precision::kBf16;   // keys and values in the cache
  std::optional<ServingPool> prefill;
  std::optional<ServingPool> decode;
  std::string serving_location;  // of the `serving:` section

  const ServingPool& pool(ServingPhase phase) const {
    return phase == ServingPhase::kPrefill ? *prefill : *decode;
  }
};

// Default of serving.hbm_efficiency: the fraction of HBM bandwidth a memory-bound decode kernel
// reaches. FlashMLA's dense decode kernel measured "up to 3000 GB/s in memory-bound
// configuration" on H800 SXM5 (deepseek-ai/FlashMLA README, commit 066b5ba6; entry `flashmla` of
// the serving data collected for issue 20), whose HBM3 peak is 3.35 TB/s: 3000 / 3350 = 0.896.
inline constexpr double kDefaultServingHbmEfficiency = 3000.0 / 3350.0;

// Reads `model:`, `compute:` and `serving:` from a scenario root. Throws InputError naming the
// file, key and value for every bad or inconsistent entry (a tp that does not divide the heads,
// an ep on a dense model, a missing pool...).
ServingSpec parse_serving(const config::Node& scenario_root);

// Gives pools without `accelerators` all `topology_accelerators`, and checks the others fit and
// divide into replicas. Throws InputError naming the pool's key.
void resolve_serving_pools(ServingSpec& spec, int topology_accelerators);

// KV cache bytes of one token in one layer on one rank: keys and values of the rank's KV heads
// (GQA heads split over tp, at least one per rank), or MLA's compressed latent and rotary key
// (replicated on every tensor-parallel rank).
double kv_bytes_per_token_layer(const ServingSpec& spec, int tp);

// The single-stage WorkloadSpec of one pass of `phase`'s pool at `batch` (its layout, its
// shapes) and the forward pass the generator builds for it.
WorkloadSpec serving_workload(const ServingSpec& spec, ServingPhase phase, std::int64_t batch);
ForwardPass serving_forward_pass(const ServingSpec& spec, ServingPhase phase, std::int64_t batch);

// Memory per accelerator of a pool at `batch`.
struct ServingMemory {
  Bytes weights;      // the rank's share of the parameters, in the serving precision
  Bytes kv_cache;     // batch x tokens x KV bytes per token and layer x layers
  Bytes activations;  // the live activations of one layer and the logits
  Bytes capacity;     // the device's HBM
  // The largest batch whose weights, KV cache and activations fit in the capacity (0: the
  // weights alone do not fit).
  std::int64_t max_batch = 0;
  Bytes total() const { return weights + kv_cache + activations; }
};

ServingMemory serving_memory(const ServingSpec& spec, ServingPhase phase, std::int64_t batch);

}  // namespace stepsim::workloads
