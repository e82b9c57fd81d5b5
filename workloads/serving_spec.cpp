#include "workloads/serving_spec.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "sim/common/input_error.hpp"
#include "workloads/layer_costs.hpp"
#include "workloads/memory_model.hpp"

namespace stepsim::workloads {

std::string_view to_string(ServingPhase phase) {
  return phase == ServingPhase::kPrefill ? "prefill" : "decode";
}

namespace {

constexpr std::int64_t kMaxBatch = 1 << 20;
constexpr std::int64_t kMaxTokens = 1 << 24;

double to_double(std::int64_t v) {
  return static_cast<double>(v);
}

// Bytes of one stored element in serving: FP8 weights and caches are 1 byte (training's
// element_bytes counts FP8 as 2, its activations and master weights being BF16).
std::int64_t stored_bytes(Precision p) {
  return p == Precision::kFp8 ? 1 : element_bytes(p);
}

Precision read_precision(const config::Node& n) {
  const std::string s = n.as_choice({"bf16", "fp16", "fp8"});
  return s == "bf16" ? Precision::kBf16 : s == "fp16" ? Precision::kFp16 : Precision::kFp8;
}

// The checks of training's check_layout that a single-stage forward pass needs, each naming the
// pool's key.
void check_pool(const config::Node& n, const ModelSpec& m, const ServingPool& p) {
  auto key = [&](const char* k) { return n.find(k).value_or(n); };
  if (m.heads % p.tp != 0) {
    key("tp").fail_with(
        fmt::format("tp {} must divide the {} attention heads of {}", p.tp, m.heads, m.name));
  }
  if (!m.mla_enabled && m.kv_heads % p.tp != 0 && p.tp % m.kv_heads != 0) {
    key("tp").fail_with(fmt::format(
        "tp {} and the {} key/value heads of {} must divide one another (heads are split, or "
        "replicated when tp is larger)",
        p.tp, m.kv_heads, m.name));
  }
  check_model_split(n, m, p.tp, p.ep);
}

ServingPool read_pool(const config::Node& n, const ModelSpec& model, ServingPhase phase) {
  const char* length_key = phase == ServingPhase::kDecode ? "context" : "prompt";
  n.allow_keys({"accelerators", "tp", "ep", "batch", length_key});
  ServingPool p;
  p.location = n.location();
  if (auto v = n.find("accelerators")) p.accelerators = static_cast<int>(v->as_int(1, 1 << 24));
  if (auto v = n.find("tp")) p.tp = static_cast<int>(v->as_int(1, 1 << 20));
  if (auto v = n.find("ep")) p.ep = static_cast<int>(v->as_int(1, 1 << 20));
  if (auto v = n.find("batch")) p.batch = v->as_int(1, kMaxBatch);
  p.tokens = n.at(length_key).as_int(1, kMaxTokens);
  check_pool(n, model, p);
  return p;
}

// Forward-pass shape of a pool at `batch` (layer_costs.hpp's MicroBatchShape): decode has one
// new token per sequence attending to `tokens` of context; prefill has the whole prompt.
MicroBatchShape pass_shape(const ServingSpec& spec, ServingPhase phase, std::int64_t batch) {
  const ServingPool& pool = spec.pool(phase);
  MicroBatchShape shape;
  shape.seq_len = pool.tokens;
  shape.tokens = phase == ServingPhase::kDecode ? batch : batch * pool.tokens;
  const bool split = spec.model.moe_enabled && pool.tp > 1;
  // A batch that tp does not divide (the TPOT search tries every batch) is padded.
  shape.sharded_tokens = split ? (shape.tokens + pool.tp - 1) / pool.tp : shape.tokens;
  shape.routed_tokens = shape.sharded_tokens * (spec.model.moe_enabled ? spec.model.moe.top_k : 0);
  shape.tp = pool.tp;
  shape.ep = pool.ep;
  shape.element_bytes = stored_bytes(spec.precision);
  return shape;
}

}  // namespace

ServingSpec parse_serving(const config::Node& root) {
  ServingSpec spec;
  const config::Node serving = root.at("serving");
  serving.allow_keys({"precision", "kv_cache_dtype", "hbm_efficiency", "prefill", "decode"});
  spec.serving_location = serving.location();
  spec.model = parse_model(root.at("model"));
  if (auto v = serving.find("precision")) spec.precision = read_precision(*v);
  spec.kv_cache = spec.precision;
  if (auto v = serving.find("kv_cache_dtype")) spec.kv_cache = read_precision(*v);
  spec.compute = parse_compute(root.at("compute"), spec.precision);
  spec.compute.memory_efficiency = kDefaultServingHbmEfficiency;
  if (auto v = serving.find("hbm_efficiency")) {
    spec.compute.memory_efficiency = v->as_double(0.0, 1.0);
    if (spec.compute.memory_efficiency <= 0) v->fail("an efficiency in (0, 1]");
  }
  if (auto v = serving.find("prefill"))
    spec.prefill = read_pool(*v, spec.model, ServingPhase::kPrefill);
  if (auto v = serving.find("decode"))
    spec.decode = read_pool(*v, spec.model, ServingPhase::kDecode);
  if (!spec.prefill && !spec.decode)
    serving.fail_with("a serving section needs a 'prefill' pool, a 'decode' pool or both");
  return spec;
}

void resolve_serving_pools(ServingSpec& spec, int topology_accelerators) {
  for (std::optional<ServingPool>* pool : {&spec.prefill, &spec.decode}) {
    if (!*pool) continue;
    ServingPool& p = **pool;
    const std::string_view name = pool == &spec.prefill ? "serving.prefill" : "serving.decode";
    if (p.accelerators == 0) p.accelerators = topology_accelerators;
    if (p.accelerators > topology_accelerators) {
      throw InputError(fmt::format("{}: {}.accelerators: {} accelerators, but the topology has {}",
                                   p.location, name, p.accelerators, topology_accelerators));
    }
    if (p.accelerators % p.tp != 0) {
      throw InputError(fmt::format(
          "{}: {}: tp {} must divide the pool's {} accelerators (each replica has tp ranks)",
          p.location, name, p.tp, p.accelerators));
    }
    if (p.accelerators % p.ep != 0) {
      throw InputError(
          fmt::format("{}: {}: ep {} must divide the pool's {} accelerators (expert-parallel "
                      "groups are carved out of the pool)",
                      p.location, name, p.ep, p.accelerators));
    }
  }
}

double kv_bytes_per_token_layer(const ServingSpec& spec, int tp) {
  const ModelSpec& m = spec.model;
  const double e = to_double(stored_bytes(spec.kv_cache));
  if (m.mla_enabled) return to_double(m.mla.kv_lora_rank + m.mla.qk_rope_head_dim) * e;
  const std::int64_t heads = std::max<std::int64_t>(1, m.kv_heads / tp);
  return 2.0 * to_double(heads * m.head_dim) * e;
}

WorkloadSpec serving_workload(const ServingSpec& spec, ServingPhase phase, std::int64_t batch) {
  const ServingPool& pool = spec.pool(phase);
  WorkloadSpec w;
  w.model = spec.model;
  w.compute = spec.compute;
  w.parallel.tp = pool.tp;
  w.parallel.ep = pool.ep;
  w.parallel.dp = pool.replicas();
  w.parallel.sp = spec.model.moe_enabled && pool.tp > 1;
  w.training.seq_len = pool.tokens;
  w.training.micro_batch = batch;
  w.training.global_batch = batch * w.parallel.dp;
  w.training.precision = spec.precision;
  w.parallelism_location = pool.location;
  return w;
}

ForwardPass serving_forward_pass(const ServingSpec& spec, ServingPhase phase, std::int64_t batch) {
  const ServingPool& pool = spec.pool(phase);
  ForwardPass pass;
  pass.shape = pass_shape(spec, phase, batch);
  // Decode reads the context of every sequence; prefill writes the prompt's keys and values.
  pass.kv_cache_bytes_per_layer =
      to_double(batch * pool.tokens) * kv_bytes_per_token_layer(spec, pool.tp);
  pass.logit_tokens = batch;
  return pass;
}

ServingMemory serving_memory(const ServingSpec& spec, ServingPhase phase, std::int64_t batch) {
  const ServingPool& pool = spec.pool(phase);
  const ModelSpec& m = spec.model;
  const std::int64_t e = stored_bytes(spec.precision);
  ServingMemory memory;
  memory.capacity = spec.compute.device.hbm_capacity;
  const RankParameters params = rank_parameters(serving_workload(spec, phase, 1), 0);
  memory.weights = Bytes(std::llround(params.total() * to_double(e)));
  // Per sequence: its KV cache in every layer, and its share of the live activations.
  const double kv_per_sequence =
      to_double(pool.tokens * m.layers) * kv_bytes_per_token_layer(spec, pool.tp);
  const MicroBatchShape one = pass_shape(spec, phase, 1);
  // The live activations of one layer: the residual stream, the normed input and the attention
  // output (hidden wide each), the MLP's intermediate (gate and up) on the rank; and the logits
  // of the sequence's last token in FP32.
  const double gate_up = m.gated_mlp ? 2.0 : 1.0;
  const double dense_mlp = m.dense_layers() > 0 ? gate_up * to_double(m.ffn) / pool.tp : 0.0;
  const double moe_mlp = m.moe_enabled ? gate_up * to_double(m.moe.expert_ffn * m.moe.top_k) : 0.0;
  const double activation_per_sequence =
      to_double(one.tokens) * (3.0 * to_double(m.hidden) + std::max(dense_mlp, moe_mlp)) *
          to_double(e) +
      to_double(vocabulary_rows_per_rank(m, pool.tp)) * 4.0;
  const double per_sequence = kv_per_sequence + activation_per_sequence;
  memory.kv_cache = Bytes(std::llround(kv_per_sequence * to_double(batch)));
  memory.activations = Bytes(std::llround(activation_per_sequence * to_double(batch)));
  const double free = (memory.capacity - memory.weights).as_double();
  memory.max_batch = free > 0 ? static_cast<std::int64_t>(std::floor(free / per_sequence)) : 0;
  return memory;
}

}  // namespace stepsim::workloads
