#include "workloads/serving_spec.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "sim/common/input_error.hpp"
#include "workloads/layer_costs.hpp"
#include "workloads/memory_model.hpp"

namespace stepsim::workloads {

std::string_view to_string(ServingPhase phase) {
  return phase == ServingPhase::kPrefill ? "prefill" : "decode";
}

std::string_view to_string(KvTransferPlane plane) {
  return plane == KvTransferPlane::kScaleUp ? "scale-up" : "scale-out";
}

namespace {

constexpr std::int64_t kMaxBatch = 1 << 20;
constexpr std::int64_t kMaxTokens = 1 << 24;
constexpr std::int64_t kMaxMtpDepth = 8;
constexpr double kMaxRequestRate = 1e9;  // per second: beyond any deployment, keeps figures finite

// Tokens per sequence a decode step runs: the next one and the MTP drafts it verifies.
std::int64_t decode_tokens_per_sequence(const ServingSpec& spec, ServingPhase phase) {
  return phase == ServingPhase::kDecode ? 1 + spec.mtp.depth : 1;
}

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

// A list of indices: a YAML list of integers, one integer, or ranges in a string ("0-31,64-95").
std::vector<std::uint32_t> read_indices(const config::Node& n) {
  constexpr std::int64_t kMaxIndex = (1 << 24) - 1;
  const char* const expected = "indices: a list of integers or ranges like '0-31,64-95'";
  std::vector<std::uint32_t> out;
  if (n.is_sequence()) {
    for (const config::Node& item : n.items())
      out.push_back(static_cast<std::uint32_t>(item.as_int(0, kMaxIndex)));
  } else if (n.is_scalar()) {
    const std::string text = n.as_string();
    std::size_t pos = 0;
    auto number = [&](std::size_t& at) {
      const std::size_t begin = at;
      std::int64_t v = 0;
      while (at < text.size() && text[at] >= '0' && text[at] <= '9' && v <= kMaxIndex)
        v = v * 10 + (text[at++] - '0');
      if (at == begin || v > kMaxIndex) n.fail(expected);
      return v;
    };
    while (pos <= text.size()) {
      while (pos < text.size() && text[pos] == ' ')
        ++pos;
      const std::int64_t first = number(pos);
      std::int64_t last = first;
      if (pos < text.size() && text[pos] == '-') last = number(++pos);
      if (last < first) n.fail(expected);
      for (std::int64_t i = first; i <= last; ++i)
        out.push_back(static_cast<std::uint32_t>(i));
      while (pos < text.size() && text[pos] == ' ')
        ++pos;
      if (pos == text.size()) break;
      if (text[pos] != ',') n.fail(expected);
      ++pos;
    }
  } else {
    n.fail(expected);
  }
  if (out.empty()) n.fail(expected);
  return out;
}

// The pool's length: `prompt` or `context` as written or, with a request mix, from it: the
// prompt is the requests' input; the context defaults to the average a sequence attends to over
// its decode, input + output / 2. A prompt that differs from the requests' input is an error.
std::int64_t read_pool_length(const config::Node& n, ServingPhase phase,
                              const std::optional<RequestMix>& requests) {
  const char* length_key = phase == ServingPhase::kDecode ? "context" : "prompt";
  const std::optional<config::Node> given = n.find(length_key);
  if (!requests) return n.at(length_key).as_int(1, kMaxTokens);
  if (phase == ServingPhase::kDecode) {
    return given ? given->as_int(1, kMaxTokens)
                 : requests->input_tokens + requests->output_tokens / 2;
  }
  if (!given) return requests->input_tokens;
  const std::int64_t prompt = given->as_int(1, kMaxTokens);
  if (prompt != requests->input_tokens) {
    given->fail_with(fmt::format(
        "prompt {} differs from serving.requests.input_tokens {} ({}): the prefill pass runs "
        "the requests' prompts; leave out 'prompt'",
        prompt, requests->input_tokens, requests->location));
  }
  return prompt;
}

RequestMix read_requests(const config::Node& n) {
  if (!n.is_map()) n.fail("a map like {input_tokens: 2048, output_tokens: 512, rate: 12/s}");
  n.allow_keys({"input_tokens", "output_tokens", "rate"});
  RequestMix mix;
  mix.location = n.location();
  mix.input_tokens = n.at("input_tokens").as_int(1, kMaxTokens);
  mix.output_tokens = n.at("output_tokens").as_int(1, kMaxTokens);
  const config::Node rate = n.at("rate");
  mix.rate_per_s = parse_request_rate(rate);
  mix.rate_text = rate.as_string();
  return mix;
}

ServingPool read_pool(const config::Node& n, const ModelSpec& model, ServingPhase phase,
                      const std::optional<RequestMix>& requests) {
  const char* length_key = phase == ServingPhase::kDecode ? "context" : "prompt";
  n.allow_keys({"accelerators", "placement", "nodes", "tp", "ep", "redundant_experts", "batch",
                "micro_batches", length_key});
  ServingPool p;
  p.location = n.location();
  p.name = n.path();
  if (auto v = n.find("accelerators")) p.accelerators = static_cast<int>(v->as_int(1, 1 << 24));
  if (auto v = n.find("placement")) p.placement = read_indices(*v);
  if (auto v = n.find("nodes")) {
    if (!p.placement.empty()) v->fail_with("give 'placement' (accelerators) or 'nodes', not both");
    p.nodes = read_indices(*v);
  }
  if (!p.placement.empty() && p.accelerators != 0 &&
      static_cast<std::size_t>(p.accelerators) != p.placement.size()) {
    n.at("accelerators")
        .fail_with(fmt::format("{} accelerators, but 'placement' names {}", p.accelerators,
                               p.placement.size()));
  }
  if (auto v = n.find("tp")) p.tp = static_cast<int>(v->as_int(1, 1 << 20));
  if (auto v = n.find("ep")) p.ep = static_cast<int>(v->as_int(1, 1 << 20));
  if (auto v = n.find("batch")) p.batch = v->as_int(1, kMaxBatch);
  if (auto v = n.find("micro_batches")) p.micro_batches = static_cast<int>(v->as_int(1, 2));
  p.tokens = read_pool_length(n, phase, requests);
  ModelSpec pool = model;
  if (auto v = n.find("redundant_experts")) {
    p.redundant_experts = static_cast<int>(v->as_int(0, 1 << 20));
    if (!model.moe_enabled && p.redundant_experts > 0)
      v->fail_with(fmt::format("redundant experts need a mixture-of-experts model; {} is dense",
                               model.name));
    pool.moe.experts += p.redundant_experts;
    if (pool.moe.experts % p.ep != 0) {
      n.find("ep").value_or(n).fail_with(fmt::format(
          "ep {} must divide the {} experts of {} and the {} redundant ones ({} in all)", p.ep,
          model.moe.experts, model.name, p.redundant_experts, pool.moe.experts));
    }
  }
  check_pool(n, pool, p);
  return p;
}

// Forward-pass shape of a pool at `batch` (layer_costs.hpp's MicroBatchShape): decode has one
// new token per sequence attending to `tokens` of context; prefill has the whole prompt.
MicroBatchShape pass_shape(const ServingSpec& spec, ServingPhase phase, std::int64_t batch) {
  const ServingPool& pool = spec.pool(phase);
  MicroBatchShape shape;
  shape.seq_len = pool.tokens;
  shape.tokens = phase == ServingPhase::kDecode ? batch * decode_tokens_per_sequence(spec, phase)
                                                : batch * pool.tokens;
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

double parse_request_rate(const config::Node& n) {
  const char* const expected = "a request rate with its unit, like 12/s, 720/min or 3600/h";
  if (!n.is_scalar()) n.fail(expected);
  std::string text = n.as_string();
  std::erase(text, ' ');
  const std::size_t slash = text.find('/');
  if (slash == std::string::npos || slash == 0) n.fail(expected);
  const std::string unit = text.substr(slash + 1);
  const double per = unit == "s" ? 1.0 : unit == "min" ? 60.0 : unit == "h" ? 3600.0 : 0.0;
  if (per == 0.0) n.fail(expected);
  double count = 0;
  const char* const first = text.data();
  const char* const last = text.data() + slash;
  const auto [end, error] = std::from_chars(first, last, count);
  if (error != std::errc() || end != last || !std::isfinite(count) || count <= 0) n.fail(expected);
  if (count / per > kMaxRequestRate) {
    n.fail_with(fmt::format("{} is {:g} requests per second; at most {:g}", text, count / per,
                            kMaxRequestRate));
  }
  return count / per;
}

ServingSpec parse_serving(const config::Node& root) {
  ServingSpec spec;
  const config::Node serving = root.at("serving");
  serving.allow_keys({"precision", "kv_cache_dtype", "combine_dtype", "hbm_efficiency",
                      "kv_transfer_plane", "mtp", "requests", "prefill", "decode"});
  spec.serving_location = serving.location();
  spec.model = parse_model(root.at("model"));
  if (auto v = serving.find("precision")) spec.precision = read_precision(*v);
  spec.kv_cache = spec.precision;
  if (auto v = serving.find("kv_cache_dtype")) spec.kv_cache = read_precision(*v);
  spec.combine = spec.precision;
  if (auto v = serving.find("combine_dtype")) spec.combine = read_precision(*v);
  spec.compute = parse_compute(root.at("compute"), spec.precision);
  spec.compute.memory_efficiency = kDefaultServingHbmEfficiency;
  if (auto v = serving.find("hbm_efficiency")) {
    spec.compute.memory_efficiency = v->as_double(0.0, 1.0);
    if (spec.compute.memory_efficiency <= 0) v->fail("an efficiency in (0, 1]");
  }
  if (auto v = serving.find("kv_transfer_plane")) {
    const std::string plane = v->as_choice({"scale-up", "scale-out"});
    spec.kv_plane = plane == "scale-up" ? KvTransferPlane::kScaleUp : KvTransferPlane::kScaleOut;
  }
  if (auto v = serving.find("requests")) spec.requests = read_requests(*v);
  if (auto v = serving.find("prefill"))
    spec.prefill = read_pool(*v, spec.model, ServingPhase::kPrefill, spec.requests);
  if (auto v = serving.find("decode"))
    spec.decode = read_pool(*v, spec.model, ServingPhase::kDecode, spec.requests);
  if (!spec.prefill && !spec.decode)
    serving.fail_with("a serving section needs a 'prefill' pool, a 'decode' pool or both");
  if (auto v = serving.find("mtp")) {
    if (!v->is_map()) v->fail("a map like {depth: 1, acceptance: 0.85}");
    v->allow_keys({"depth", "acceptance"});
    if (!spec.decode)
      v->fail_with("speculative decoding (MTP) runs in the decode step: add a 'decode' pool");
    spec.mtp.depth = 1;
    if (auto d = v->find("depth")) spec.mtp.depth = static_cast<int>(d->as_int(1, kMaxMtpDepth));
    spec.mtp.acceptance = v->at("acceptance").as_double(0.0, 1.0);
  }
  return spec;
}

namespace {

// Which pool holds each accelerator of the topology (nullptr: none yet).
using AcceleratorHolders = std::vector<const ServingPool*>;

// Gives the accelerators of `p`'s placement to `p`; `key` names the setting they came from.
void take_accelerators(AcceleratorHolders& holder, const ServingPool& p, std::string_view key) {
  const auto total = static_cast<std::uint32_t>(holder.size());
  for (const std::uint32_t a : p.placement) {
    if (a >= total) {
      throw InputError(fmt::format("{}: {}.{}: accelerator {}, but the topology has {} (0 to {})",
                                   p.location, p.name, key, a, total, total == 0 ? 0 : total - 1));
    }
    if (holder[a] == &p) {
      throw InputError(
          fmt::format("{}: {}.{}: accelerator {} is named twice", p.location, p.name, key, a));
    }
    if (holder[a] != nullptr) {
      throw InputError(fmt::format(
          "{}: {}.{}: accelerator {} is also in {}: the prefill and decode pools must not "
          "share accelerators (leave out 'accelerators', 'placement' and 'nodes' in both to "
          "colocate them)",
          p.location, p.name, key, a, holder[a]->name));
    }
    holder[a] = &p;
  }
}

// A pool placed by `nodes`: the accelerators of those nodes, as many as `accelerators` says.
void place_on_nodes(ServingPool& p,
                    const std::vector<std::vector<std::uint32_t>>& node_accelerators) {
  for (const std::uint32_t n : p.nodes) {
    if (n >= node_accelerators.size()) {
      throw InputError(fmt::format("{}: {}.nodes: node {}, but the topology has {} (0 to {})",
                                   p.location, p.name, n, node_accelerators.size(),
                                   node_accelerators.empty() ? 0 : node_accelerators.size() - 1));
    }
    const auto& on_node = node_accelerators[n];
    p.placement.insert(p.placement.end(), on_node.begin(), on_node.end());
  }
  if (p.accelerators != 0 && static_cast<std::size_t>(p.accelerators) != p.placement.size()) {
    throw InputError(fmt::format("{}: {}.accelerators: {}, but its nodes hold {} accelerators",
                                 p.location, p.name, p.accelerators, p.placement.size()));
  }
}

// A pool not placed explicitly: its `accelerators` (else all that are left) in the lowest free
// ones.
void place_in_free_accelerators(ServingPool& p, const AcceleratorHolders& holder) {
  const auto total = static_cast<std::uint32_t>(holder.size());
  const auto free = static_cast<std::size_t>(
      std::count(holder.begin(), holder.end(), static_cast<const ServingPool*>(nullptr)));
  const std::size_t want = p.accelerators != 0 ? static_cast<std::size_t>(p.accelerators) : free;
  if (want == 0 || want > free) {
    throw InputError(fmt::format(
        "{}: {}: needs {} accelerators, but only {} of the topology's {} are left beside the "
        "other pool",
        p.location, p.name, want == 0 ? std::string("some") : std::to_string(want), free, total));
  }
  for (std::uint32_t a = 0; a < total && p.placement.size() < want; ++a) {
    if (holder[a] == nullptr) p.placement.push_back(a);
  }
}

// Each replica has tp ranks and the expert-parallel groups are carved out of the pool.
void check_pool_split(const ServingPool& p) {
  if (p.accelerators % p.tp != 0) {
    throw InputError(fmt::format(
        "{}: {}: tp {} must divide the pool's {} accelerators (each replica has tp ranks)",
        p.location, p.name, p.tp, p.accelerators));
  }
  if (p.accelerators % p.ep != 0) {
    throw InputError(
        fmt::format("{}: {}: ep {} must divide the pool's {} accelerators (expert-parallel "
                    "groups are carved out of the pool)",
                    p.location, p.name, p.ep, p.accelerators));
  }
}

}  // namespace

void resolve_serving_pools(ServingSpec& spec, int topology_accelerators,
                           const std::vector<std::vector<std::uint32_t>>& node_accelerators) {
  const auto total = static_cast<std::uint32_t>(topology_accelerators);
  std::vector<ServingPool*> pools;
  for (std::optional<ServingPool>* pool : {&spec.prefill, &spec.decode})
    if (*pool) pools.push_back(&**pool);
  auto placed = [](const ServingPool& p) {
    return p.accelerators != 0 || !p.placement.empty() || !p.nodes.empty();
  };
  spec.colocated = pools.size() == 2 && !placed(*pools[0]) && !placed(*pools[1]);
  AcceleratorHolders holder(total, nullptr);
  // First the pools placed explicitly, then the others in the lowest free accelerators.
  for (ServingPool* p : pools) {
    if (spec.colocated) break;
    if (!p->nodes.empty()) {
      place_on_nodes(*p, node_accelerators);
      take_accelerators(holder, *p, "nodes");
    } else if (!p->placement.empty()) {
      take_accelerators(holder, *p, "placement");
    }
  }
  for (ServingPool* p : pools) {
    if (p->accelerators > topology_accelerators) {
      throw InputError(fmt::format("{}: {}.accelerators: {} accelerators, but the topology has {}",
                                   p->location, p->name, p->accelerators, topology_accelerators));
    }
    if (spec.colocated) {
      p->accelerators = topology_accelerators;
      p->placement.resize(total);
      for (std::uint32_t a = 0; a < total; ++a)
        p->placement[a] = a;
    } else if (p->placement.empty()) {
      place_in_free_accelerators(*p, holder);
      take_accelerators(holder, *p, "accelerators");
    }
    p->accelerators = static_cast<int>(p->placement.size());
    check_pool_split(*p);
  }
}

double kv_bytes_per_token_layer(const ServingSpec& spec, int tp) {
  const ModelSpec& m = spec.model;
  const double e = to_double(stored_bytes(spec.kv_cache));
  if (m.mla_enabled) return to_double(m.mla.kv_lora_rank + m.mla.qk_rope_head_dim) * e;
  const std::int64_t heads = std::max<std::int64_t>(1, m.kv_heads / tp);
  return 2.0 * to_double(heads * m.head_dim) * e;
}

namespace {

// The KV units a rank of a tp-wide replica holds: GQA's KV heads (split over tp, or one head
// replicated on tp / heads ranks), or MLA's latent, one unit held whole by every rank.
std::vector<std::int64_t> kv_units(const ModelSpec& m, int tp, int rank) {
  if (m.mla_enabled) return {0};
  const std::int64_t heads = m.kv_heads;
  if (tp >= heads) return {static_cast<std::int64_t>(rank) * heads / tp};
  std::vector<std::int64_t> units;
  for (std::int64_t h = rank * heads / tp; h < (rank + 1) * heads / tp; ++h)
    units.push_back(h);
  return units;
}

}  // namespace

std::vector<KvTransfer> kv_transfers(const ServingSpec& spec) {
  std::vector<KvTransfer> out;
  if (!spec.prefill || !spec.decode || spec.colocated) return out;
  const ModelSpec& m = spec.model;
  const ServingPool& p = *spec.prefill;
  const ServingPool& d = *spec.decode;
  // Bytes of one KV unit (a head's keys and values, or the latent) for the whole prompt.
  const double unit_bytes = kv_bytes_per_token_layer(spec, m.mla_enabled ? 1 : m.kv_heads) *
                            to_double(p.tokens * m.layers);
  for (int pr = 0; pr < p.replicas(); ++pr) {
    for (std::int64_t b = 0; b < p.batch; ++b) {
      const std::int64_t request = pr * p.batch + b;
      const auto dr = static_cast<int>(request % d.replicas());
      for (int j = 0; j < d.tp; ++j) {
        // Units from each prefill rank of the replica, in rank order.
        std::vector<std::int64_t> from_rank(static_cast<std::size_t>(p.tp), 0);
        for (const std::int64_t u : kv_units(m, d.tp, j)) {
          std::vector<int> holders;
          for (int i = 0; i < p.tp; ++i) {
            const auto held = kv_units(m, p.tp, i);
            if (std::find(held.begin(), held.end(), u) != held.end()) holders.push_back(i);
          }
          ++from_rank[static_cast<std::size_t>(
              holders[static_cast<std::size_t>(j) % holders.size()])];
        }
        for (int i = 0; i < p.tp; ++i) {
          const std::int64_t units = from_rank[static_cast<std::size_t>(i)];
          if (units == 0) continue;
          out.push_back({request, p.placement[static_cast<std::size_t>(pr * p.tp + i)],
                         d.placement[static_cast<std::size_t>(dr * d.tp + j)],
                         Bytes(std::llround(unit_bytes * to_double(units)))});
        }
      }
    }
  }
  return out;
}

ModelSpec pool_model(const ServingSpec& spec, ServingPhase phase) {
  ModelSpec m = spec.model;
  m.moe.experts += spec.pool(phase).redundant_experts;
  if (phase == ServingPhase::kDecode) m.layers += spec.mtp.depth;
  return m;
}

WorkloadSpec serving_workload(const ServingSpec& spec, ServingPhase phase, std::int64_t batch) {
  const ServingPool& pool = spec.pool(phase);
  WorkloadSpec w;
  w.model = pool_model(spec, phase);
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

double absorbed_mla_decode_flops(const ServingSpec& spec, int tp, std::int64_t batch) {
  const ModelSpec& m = spec.model;
  if (!m.mla_enabled || !spec.decode) return -1;
  return 2.0 * to_double(batch) * to_double(spec.decode->tokens) * to_double(m.heads / tp) *
         to_double(2 * m.mla.kv_lora_rank + m.mla.qk_rope_head_dim);
}

ForwardPass serving_forward_pass(const ServingSpec& spec, ServingPhase phase, std::int64_t batch) {
  const ServingPool& pool = spec.pool(phase);
  ForwardPass pass;
  pass.shape = pass_shape(spec, phase, batch);
  // Decode reads the context of every sequence; prefill writes the prompt's keys and values.
  pass.kv_cache_bytes_per_layer =
      to_double(batch * pool.tokens) * kv_bytes_per_token_layer(spec, pool.tp);
  // With MTP every token of a sequence (the next one and its drafts) is scored against the same
  // cache and gets its logits; the cache is read once.
  const std::int64_t per_sequence = decode_tokens_per_sequence(spec, phase);
  pass.logit_tokens = batch * per_sequence;
  if (phase == ServingPhase::kDecode && spec.model.mla_enabled)
    pass.attention_core_flops_per_layer =
        absorbed_mla_decode_flops(spec, pool.tp, batch) * to_double(per_sequence);
  return pass;
}

Program interleave_micro_batches(const std::vector<Program>& micro_batches) {
  struct Key {
    std::int32_t segment = 0;
    std::int32_t part = 0;
    std::uint32_t micro_batch = 0;
    std::uint32_t index = 0;
    auto operator<=>(const Key&) const = default;
  };
  constexpr std::int32_t kAfterLayers = 1 << 20;
  std::vector<Key> keys;
  for (std::uint32_t mb = 0; mb < micro_batches.size(); ++mb) {
    const Program& program = micro_batches[mb];
    bool seen_layer = false;
    std::int32_t segment = -1;
    std::int32_t part = 0;
    for (std::uint32_t i = 0; i < program.ops.size(); ++i) {
      const Op& op = program.ops[i];
      seen_layer = seen_layer || op.layer != kNoLayer;
      const std::int32_t s = op.layer != kNoLayer ? op.layer : seen_layer ? kAfterLayers : -1;
      if (s != segment) {
        segment = s;
        part = 0;
      }
      keys.push_back({segment, part, mb, i});
      if (op.kind != OpKind::kCompute) ++part;
    }
  }
  // Segments and parts never decrease along a program, so the sort keeps each program's order
  // and every dependency still points to an earlier operation.
  std::sort(keys.begin(), keys.end());
  std::vector<std::vector<std::uint32_t>> new_index(micro_batches.size());
  for (std::uint32_t mb = 0; mb < micro_batches.size(); ++mb)
    new_index[mb].resize(micro_batches[mb].ops.size());
  for (std::uint32_t k = 0; k < keys.size(); ++k)
    new_index[keys[k].micro_batch][keys[k].index] = k;
  Program merged;
  merged.ops.reserve(keys.size());
  std::array<std::uint32_t, static_cast<std::size_t>(Communicator::kCount)> seq{};
  for (const Key& key : keys) {
    const Program& program = micro_batches[key.micro_batch];
    Op op = program.ops[key.index];
    const auto deps = program.deps_of(op);
    op.dep_begin = static_cast<std::uint32_t>(merged.deps.size());
    for (const std::uint32_t d : deps)
      merged.deps.push_back(new_index[key.micro_batch][d]);
    op.micro_batch = static_cast<std::int32_t>(key.micro_batch);
    if (op.kind == OpKind::kCollective) op.seq = seq[static_cast<std::size_t>(op.group)]++;
    merged.ops.push_back(op);
  }
  return merged;
}

namespace {

// One pass's forward program with its combines at the combine precision.
Program one_pass_program(const ServingSpec& spec, ServingPhase phase, std::int64_t batch) {
  Program program = generate_forward_program(serving_workload(spec, phase, batch),
                                             serving_forward_pass(spec, phase, batch));
  const std::int64_t activation = stored_bytes(spec.precision);
  const std::int64_t combine = stored_bytes(spec.combine);
  if (combine != activation) {
    for (Op& op : program.ops) {
      if (op.name == OpName::kEpCombine) op.bytes = op.bytes / activation * combine;
    }
  }
  return program;
}

}  // namespace

Program serving_program(const ServingSpec& spec, ServingPhase phase, std::int64_t batch) {
  if (spec.pool(phase).micro_batches < 2 || batch < 2) return one_pass_program(spec, phase, batch);
  return interleave_micro_batches(
      {one_pass_program(spec, phase, batch - batch / 2), one_pass_program(spec, phase, batch / 2)});
}

ServingMemory serving_memory(const ServingSpec& spec, ServingPhase phase, std::int64_t batch) {
  const ServingPool& pool = spec.pool(phase);
  const ModelSpec m = pool_model(spec, phase);  // with the MTP blocks, which have a cache too
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
      to_double(vocabulary_rows_per_rank(m, pool.tp)) * 4.0 *
          to_double(decode_tokens_per_sequence(spec, phase));
  const double per_sequence = kv_per_sequence + activation_per_sequence;
  memory.kv_cache = Bytes(std::llround(kv_per_sequence * to_double(batch)));
  memory.activations = Bytes(std::llround(activation_per_sequence * to_double(batch)));
  const double free = (memory.capacity - memory.weights).as_double();
  memory.max_batch = free > 0 ? static_cast<std::int64_t>(std::floor(free / per_sequence)) : 0;
  return memory;
}

}  // namespace stepsim::workloads
