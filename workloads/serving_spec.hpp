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
#include <vector>

#include "sim/common/config.hpp"
#include "sim/common/units.hpp"
#include "workloads/compute_model.hpp"
#include "workloads/model.hpp"
#include "workloads/program.hpp"
#include "workloads/step_generator.hpp"
#include "workloads/workload_spec.hpp"

namespace stepsim::workloads {

enum class ServingPhase : std::uint8_t { kPrefill, kDecode };

std::string_view to_string(ServingPhase phase);

// The network a request's KV cache crosses from its prefill ranks to its decode ranks
// (`serving.kv_transfer_plane`): kScaleUp follows the topology's routing policy (inside one
// scale-up domain, over it: NVLink, CloudMatrix384's UB; otherwise through the NICs); kScaleOut
// always goes through the NICs and the scale-out fabric (CloudMatrix384's RDMA plane), even inside
// one scale-up domain.
enum class KvTransferPlane : std::uint8_t { kScaleUp, kScaleOut };

std::string_view to_string(KvTransferPlane plane);

// One pool of accelerators serving one phase, placed on accelerators of the topology
// (docs/serving.md, "Placement"): its ranks run on `placement`, in rank order.
struct ServingPool {
  int accelerators = 0;  // 0 until resolve_serving_pools when not given
  // Accelerators (indices into the topology's) in rank order: rank r of the pool runs on
  // placement[r]. As written (`placement:`) until resolve_serving_pools, which fills it from
  // `nodes:` or by default.
  std::vector<std::uint32_t> placement;
  std::vector<std::uint32_t> nodes;  // `nodes:` as written: indices of the topology's nodes
  int tp = 1;                        // tensor-parallel ranks of one replica
  int ep = 1;                        // expert-parallel ranks (MoE models)
  // Copies of experts beyond the model's routed experts, spread over the ep ranks with them
  // (DeepSeek's and CloudMatrix-Infer's redundant experts: (experts + redundant) / ep per rank).
  // They take memory and weights to read; routing stays uniform over all copies.
  int redundant_experts = 0;
  // Decode: sequences per step on each replica; prefill: prompts per pass on each replica.
  std::int64_t batch = 1;
  // Decode: KV tokens per sequence (the context each new token attends to); prefill: the prompt.
  std::int64_t tokens = 0;
  // 2: the batch runs as two micro-batches whose operations interleave, one's communication
  // beside the other's compute (interleave_micro_batches); 1: one pass.
  int micro_batches = 1;
  std::string location;  // "file:line:col" of the pool's section, for messages
  std::string name;      // "serving.prefill" or "serving.decode", for messages

  int replicas() const { return accelerators / tp; }
};

// Speculative decoding with multi-token-prediction modules (`serving.mtp`): DeepSeek-V3's MTP
// module (arXiv 2412.19437, section 2.2: one transformer block, its projection and the shared
// embedding and output head per prediction depth) drafts `depth` tokens beyond the next one; the
// decode step verifies them, so the main model and the MTP blocks run 1 + depth tokens per
// sequence, and a step yields 1 + a + a^2 + ... + a^depth tokens on average, a the acceptance
// of each draft token (the next is drafted only after the previous was accepted).
struct MtpSpec {
  int depth = 0;  // 0: no speculative decoding
  double acceptance = 0;
  // Average tokens a decode step yields per sequence.
  double tokens_per_step() const {
    double tokens = 1;
    double p = 1;
    for (int k = 0; k < depth; ++k) {
      p *= acceptance;
      tokens += p;
    }
    return tokens;
  }
};

// The requests a deployment serves (`serving.requests`, docs/serving.md "Request mix"): each
// request has `input_tokens` of prompt and produces `output_tokens`; they arrive at `rate` per
// second on average. From it `stepsim serve` derives the decode batch that keeps up (Little's
// law) and the load of the prefill pool.
struct RequestMix {
  std::int64_t input_tokens = 0;
  std::int64_t output_tokens = 0;
  double rate_per_s = 0;  // requests per second
  std::string rate_text;  // as written: "12/s"
  std::string location;   // "file:line:col" of the section, for messages
};

// Parses a request rate with its unit: "12/s", "0.5/s", "720/min", "3600/h" (requests per
// second, minute or hour); the number finite and above zero. Throws InputError (via `n`) naming
// the key and the value.
double parse_request_rate(const config::Node& n);

struct ServingSpec {
  ModelSpec model;
  // The scenario's compute model with memory_efficiency set from `serving.hbm_efficiency`.
  ComputeModel compute;
  Precision precision = Precision::kBf16;  // weights and activations
  Precision kv_cache = Precision::kBf16;   // keys and values in the cache
  // The expert combine all-to-all's elements (`serving.combine_dtype`, default: precision):
  // DeepSeek dispatches in FP8 and combines in BF16. The dispatch moves `precision`.
  Precision combine = Precision::kBf16;
  std::optional<ServingPool> prefill;
  std::optional<ServingPool> decode;
  // Both pools on the same accelerators, taking turns (neither gives `accelerators`,
  // `placement` or `nodes`): no KV cache moves between them.
  bool colocated = false;
  KvTransferPlane kv_plane = KvTransferPlane::kScaleUp;
  MtpSpec mtp;  // decode only
  std::optional<RequestMix> requests;
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

// Places the pools on the topology, whose accelerators are `topology_accelerators` and whose
// nodes hold `node_accelerators` (accelerator indices per node, in topology order):
//  - neither pool gives `accelerators`, `placement` or `nodes`: both use every accelerator
//    (colocated, taking turns);
//  - otherwise a pool with `placement` or `nodes` runs there; the others take the lowest
//    accelerators no pool holds, prefill first then decode, `accelerators` of them (default: all
//    that are left).
// Throws InputError naming the pool's key for a pool beyond the topology, two pools that share an
// accelerator, an accelerator named twice, and a pool whose size tp or ep does not divide.
void resolve_serving_pools(ServingSpec& spec, int topology_accelerators,
                           const std::vector<std::vector<std::uint32_t>>& node_accelerators);

// One request's KV cache moving from one prefill rank to one decode rank: accelerator indices
// and bytes.
struct KvTransfer {
  std::int64_t request = 0;  // prefill replica x batch + prompt
  std::uint32_t from = 0;    // accelerator of the prefill rank
  std::uint32_t to = 0;      // accelerator of the decode rank
  Bytes bytes;
};

// The KV transfers after one prefill pass of every prefill replica (batch prompts each): request
// k goes to decode replica k mod (decode replicas). Each decode rank receives the KV heads it
// holds (GQA heads split over its tp; MLA's latent whole) for every layer and prompt token, from
// the prefill rank of the request's replica that holds them (of several holders, the one with
// the decode rank's index modulo their count). Empty when the pools are colocated or one is
// missing.
std::vector<KvTransfer> kv_transfers(const ServingSpec& spec);

// KV cache bytes of one token in one layer on one rank: keys and values of the rank's KV heads
// (GQA heads split over tp, at least one per rank), or MLA's compressed latent and rotary key
// (replicated on every tensor-parallel rank).
double kv_bytes_per_token_layer(const ServingSpec& spec, int tp);

// FLOPs of one MLA attention core in a decode step of `batch` sequences with the up-projections
// absorbed (DeepSeek-V2, arXiv 2405.04434, section 2.1.3: W_UK into the query, W_UV into the
// output projection): each of the rank's heads (heads / tp) scores its absorbed query
// (kv_lora_rank + qk_rope_head_dim wide) against every cached latent and rotary key, and sums
// the latents (kv_lora_rank wide) by those weights: 2 x batch x context x heads / tp x
// (2 kv_lora_rank + qk_rope_head_dim). The absorbed W_UK and W_UV products are the weights of
// the QKV and output GEMMs, counted there. Negative for a model without MLA.
double absorbed_mla_decode_flops(const ServingSpec& spec, int tp, std::int64_t batch);

// The model a pool runs: the scenario's, with the pool's redundant experts added to the routed
// experts, and in decode with MTP one more layer per depth (an MTP module's block, of the kind of
// the model's last layer; its projection, 2 hidden x hidden, is not counted).
ModelSpec pool_model(const ServingSpec& spec, ServingPhase phase);

// The single-stage WorkloadSpec of one pass of `phase`'s pool at `batch` (its layout, its
// shapes) and the forward pass the generator builds for it.
WorkloadSpec serving_workload(const ServingSpec& spec, ServingPhase phase, std::int64_t batch);
ForwardPass serving_forward_pass(const ServingSpec& spec, ServingPhase phase, std::int64_t batch);

// The programs of micro-batches of one pass merged into one program, so that one micro-batch's
// communication runs beside another's compute (DeepSeek's two-micro-batch decode, CloudMatrix-
// Infer's micro-batch pipelining). Each program's operations fall in segments (before the first
// layer, each layer, after the last) and, within a segment, in parts separated by its
// communication operations; the merged order is by segment, then part, then micro-batch, then
// the original order. On the in-order streams of the executor that gives, in a MoE layer:
// compute A.attention, B.attention, A.experts, B.experts; expert stream A.dispatch, B.dispatch,
// A.combine, B.combine: B's attention runs while A's tokens are dispatched. Dependencies keep
// to their micro-batch; each operation's micro_batch is its program's index, and collectives are
// renumbered (Op::seq) in the merged order, the same on every rank.
Program interleave_micro_batches(const std::vector<Program>& micro_batches);

// The program of one pass of `phase`'s pool at `batch` (every rank runs it): the forward pass
// of serving_forward_pass, its combine all-to-alls at `combine`'s bytes per element, and with
// `micro_batches: 2` the two halves (ceil(B/2) and floor(B/2)) interleaved.
Program serving_program(const ServingSpec& spec, ServingPhase phase, std::int64_t batch);

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
