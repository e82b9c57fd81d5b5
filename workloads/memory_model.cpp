#include "workloads/memory_model.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "workloads/pipeline_schedule.hpp"

namespace stepsim::workloads {

namespace {

double d(std::int64_t v) {
  return static_cast<double>(v);
}

// The virtual stages (model chunks) of pipeline rank `stage`, first layer and end.
std::vector<std::pair<std::int64_t, std::int64_t>> chunk_layers(const WorkloadSpec& spec,
                                                                int stage) {
  const auto& p = spec.parallel;
  const auto counts = layers_per_virtual_stage(spec.model.layers, virtual_stage_count(p));
  std::vector<std::int64_t> first(counts.size() + 1, 0);
  for (std::size_t i = 0; i < counts.size(); ++i)
    first[i + 1] = first[i] + counts[i];
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  for (int c = 0; c < chunks_per_rank(p); ++c) {
    const auto vs = static_cast<std::size_t>(virtual_stage_of(p, stage, c));
    out.emplace_back(first[vs], first[vs + 1]);
  }
  return out;
}

}  // namespace

RankParameters rank_parameters(const WorkloadSpec& spec, int stage) {
  const ModelSpec& m = spec.model;
  const auto& p = spec.parallel;
  const ParameterCount c = count_parameters(m);
  const double tp = p.tp;
  const double vocab_local = d((m.vocab + p.tp - 1) / p.tp);
  RankParameters r;
  const int last_vs = virtual_stage_count(p) - 1;
  const auto chunks = chunk_layers(spec, stage);
  for (std::size_t ch = 0; ch < chunks.size(); ++ch) {
    for (std::int64_t l = chunks[ch].first; l < chunks[ch].second; ++l) {
      // Norms are replicated across tensor-parallel ranks; attention and dense MLPs are split.
      // Routers and shared experts are replicated; routed experts are split over ep.
      r.dense += c.norms + (c.attention) / tp;
      if (m.is_moe_layer(l)) {
        r.dense += c.router + d(m.moe.shared_experts) * c.expert;
        r.expert += d(m.moe.experts / p.ep) * c.expert;
      } else {
        r.dense += c.dense_mlp / tp;
      }
    }
    const int vs = virtual_stage_of(p, stage, static_cast<int>(ch));
    if (vs == 0) {
      r.dense += vocab_local * d(m.hidden);
      if (m.position == PositionKind::kLearned) r.dense += d(m.max_positions * m.hidden);
    }
    if (vs == last_vs) {
      r.dense += c.final_norm;
      if (!m.tied_embeddings || last_vs > 0) r.dense += vocab_local * d(m.hidden);
    }
  }
  return r;
}

double layer_activation_bytes(const WorkloadSpec& spec, std::int64_t layer) {
  const ModelSpec& m = spec.model;
  const auto& p = spec.parallel;
  const auto& t = spec.training;
  const double s = d(t.seq_len / p.cp);
  const double b = d(t.micro_batch);
  const double h = d(m.hidden);
  const double a = d(m.heads);
  const double tp = p.tp;
  const bool sp = p.sequence_parallel();
  const double sbh = s * b * h;
  // Korthikanti et al., in units of sbh: replicated across TP without SP (norm inputs 4, QKV and
  // MLP inputs 2 + 2, two dropout masks 1 + 1 = 10), split by TP (the rest).
  const double replicated = 10.0;
  const double attention_split =
      11.0 - 2.0 - 1.0;                        // Q, K, V, attention-over-V input, out-proj input
  double mlp_split = 0;                        // in sbh units, split by TP in dense layers
  double moe_bytes = 0;                        // MoE MLP activations, bytes (no TP)
  const double act = m.gated_mlp ? 6.0 : 4.0;  // fc1 output(s) + fc2 input, per ffn unit
  if (m.is_moe_layer(layer)) {
    const double tokens = s * b / (sp ? tp : 1.0);
    const double per_expert_token = 2.0 * h + act * d(m.moe.expert_ffn);
    moe_bytes = tokens *
                (d(m.moe.top_k + m.moe.shared_experts) * per_expert_token + 4.0 * d(m.moe.experts));
  } else {
    mlp_split = act * d(m.ffn) / h;  // 16 for a 4h non-gated MLP
  }
  const double scores = 5.0 * a * s / h;  // softmax input/output and dropout mask, in sbh units
  double units = 0;
  switch (t.recompute) {
    case Recompute::kFull:
      return 2.0 * sbh / (sp ? tp : 1.0);
    case Recompute::kSelective:
      units = (sp ? replicated / tp : replicated) + (attention_split + mlp_split) / tp;
      break;
    case Recompute::kNone:
      units = (sp ? replicated / tp : replicated) + (attention_split + mlp_split + scores) / tp;
      break;
    case Recompute::kNormAndMlaUp: {
      // DeepSeek-V3 (section 3.3): the two norms' outputs (the QKV and MLP inputs, 2 + 2) are
      // recomputed, and with MLA so are the queries, keys and values (2 + 2 + 2, split by TP),
      // which leaves their latents (q_lora_rank + kv_lora_rank + the shared rotary key per
      // token, replicated). The scores stay unstored (a fused attention kernel).
      double latents = 0;
      double qkv = 0;
      if (m.mla_enabled) {
        latents = 2.0 * d(m.mla.q_lora_rank + m.mla.kv_lora_rank + m.mla.qk_rope_head_dim) / h;
        qkv = 6.0;
      }
      const double kept = replicated - 4.0 + latents;
      units = (sp ? kept / tp : kept) + (attention_split - qkv + mlp_split) / tp;
      break;
    }
  }
  return units * sbh + moe_bytes;
}

std::vector<MemoryEstimate> estimate_memory(const WorkloadSpec& spec) {
  const auto& p = spec.parallel;
  const auto& t = spec.training;
  const double fp32 = t.precision == Precision::kFp32 ? 1.0 : 0.0;
  const double weight_bytes = d(element_bytes(t.precision));
  const double grad_bytes = d(element_bytes(t.grad_reduce));
  const double optimizer_bytes = 12.0 - 4.0 * fp32;  // no separate master copy in FP32
  const double dense_n = p.dp * p.cp;
  const double expert_n = p.expert_dp();
  std::vector<MemoryEstimate> out;
  for (int stage = 0; stage < p.pp; ++stage) {
    const RankParameters rp = rank_parameters(spec, stage);
    auto sharded = [&](bool shard) {
      return shard ? rp.dense / dense_n + rp.expert / expert_n : rp.total();
    };
    MemoryEstimate e;
    e.stage = stage;
    e.parameters = Bytes(std::llround(sharded(p.zero >= 3) * weight_bytes));
    e.gradients = Bytes(std::llround(sharded(p.zero >= 2) * grad_bytes));
    e.optimizer_states = Bytes(std::llround(sharded(p.zero >= 1) * optimizer_bytes));

    // Activations alive over the schedule: each forward adds its chunk's layers, each backward
    // frees them.
    const auto chunks = chunk_layers(spec, stage);
    std::vector<double> chunk_bytes;
    double one_micro_batch = 0;
    for (const auto& [first, end] : chunks) {
      double bytes = 0;
      for (std::int64_t l = first; l < end; ++l)
        bytes += layer_activation_bytes(spec, l);
      chunk_bytes.push_back(bytes);
      one_micro_batch += bytes;
    }
    double live = 0;
    double peak = 0;
    for (const auto& st : pipeline_order(p.schedule, p.pp, stage, p.vpp, spec.micro_batches())) {
      const double bytes = chunk_bytes[static_cast<std::size_t>(st.chunk)];
      if (st.weights_only) continue;  // DualPipe's weight steps: counted freed at the backward
      live += st.forward ? bytes : -bytes;
      peak = std::max(peak, live);
    }
    e.peak_in_flight_micro_batches = one_micro_batch > 0 ? peak / one_micro_batch : 0;
    bool holds_head = false;  // DualPipe: the first and the last rank
    for (int c = 0; c < chunks_per_rank(p); ++c)
      holds_head = holds_head || virtual_stage_of(p, stage, c) == virtual_stage_count(p) - 1;
    if (holds_head) {
      peak += 4.0 * d(t.micro_batch * (t.seq_len / p.cp)) * d((spec.model.vocab + p.tp - 1) / p.tp);
    }
    e.activations = Bytes(std::llround(peak));
    e.total = e.parameters + e.gradients + e.optimizer_states + e.activations;
    e.capacity = spec.compute.device.hbm_capacity;
    e.exceeds_capacity = e.total > e.capacity;
    if (e.exceeds_capacity) {
      e.warning = fmt::format(
          "pipeline stage {}: each rank needs {} (parameters {}, gradients {}, optimizer states "
          "{}, activations {}) but {} has {}; try more tp/pp, a higher ZeRO stage or recompute",
          stage, format_bytes(e.total), format_bytes(e.parameters), format_bytes(e.gradients),
          format_bytes(e.optimizer_states), format_bytes(e.activations), spec.compute.device.name,
          format_bytes(e.capacity));
    }
    out.push_back(e);
  }
  return out;
}

}  // namespace stepsim::workloads
