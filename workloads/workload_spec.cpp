#include "workloads/workload_spec.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "sim/common/input_error.hpp"
#include "workloads/model_presets.hpp"
#include "workloads/rank_map.hpp"

namespace stepsim::workloads {

std::string_view to_string(PipelineSchedule s) {
  switch (s) {
    case PipelineSchedule::kGpipe:
      return "gpipe";
    case PipelineSchedule::kOneFOneB:
      return "1f1b";
    case PipelineSchedule::kInterleaved:
      return "interleaved";
    case PipelineSchedule::kDualPipe:
      return "dualpipe";
  }
  return "?";
}

std::string_view to_string(Recompute r) {
  switch (r) {
    case Recompute::kNone:
      return "none";
    case Recompute::kSelective:
      return "selective";
    case Recompute::kFull:
      return "full";
    case Recompute::kNormAndMlaUp:
      return "norm_and_mla_up";
  }
  return "?";
}

std::vector<std::int64_t> layers_per_virtual_stage(std::int64_t layers, int stages) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(stages), layers / stages);
  for (std::int64_t i = 0; i < layers % stages; ++i)
    ++v[static_cast<std::size_t>(i)];
  return v;
}

namespace {

constexpr std::int64_t kMaxDim = 1 << 20;

void read_mla(const config::Node& n, MlaShape& mla) {
  n.allow_keys(
      {"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"});
  if (auto v = n.find("q_lora_rank")) mla.q_lora_rank = v->as_int(0, kMaxDim);
  if (auto v = n.find("kv_lora_rank")) mla.kv_lora_rank = v->as_int(1, kMaxDim);
  if (auto v = n.find("qk_nope_head_dim")) mla.qk_nope_head_dim = v->as_int(1, kMaxDim);
  if (auto v = n.find("qk_rope_head_dim")) mla.qk_rope_head_dim = v->as_int(0, kMaxDim);
  if (auto v = n.find("v_head_dim")) mla.v_head_dim = v->as_int(1, kMaxDim);
  if (mla.kv_lora_rank <= 0 || mla.qk_nope_head_dim <= 0 || mla.v_head_dim <= 0) {
    n.fail_with("MLA needs kv_lora_rank, qk_nope_head_dim and v_head_dim");
  }
}

void read_moe(const config::Node& n, MoeShape& moe) {
  n.allow_keys({"experts", "top_k", "shared_experts", "expert_ffn", "dense_layers",
                "capacity_factor", "max_nodes_per_token", "dispatch", "expert_load"});
  if (auto v = n.find("experts")) moe.experts = v->as_int(1, kMaxDim);
  if (auto v = n.find("top_k")) moe.top_k = v->as_int(1, kMaxDim);
  if (auto v = n.find("shared_experts")) moe.shared_experts = v->as_int(0, kMaxDim);
  if (auto v = n.find("expert_ffn")) moe.expert_ffn = v->as_int(1, kMaxDim);
  if (auto v = n.find("dense_layers")) moe.dense_layers = v->as_int(0, kMaxDim);
  if (auto v = n.find("capacity_factor")) moe.capacity_factor = v->as_double(0.0, 1000.0);
  if (auto v = n.find("max_nodes_per_token")) moe.max_nodes_per_token = v->as_int(0, 64);
  if (auto v = n.find("dispatch")) {
    moe.dispatch = v->as_choice({"direct", "relayed"}) == "direct" ? ExpertDispatch::kDirect
                                                                   : ExpertDispatch::kRelayed;
  }
  if (moe.experts <= 0 || moe.top_k <= 0 || moe.expert_ffn <= 0) {
    n.fail_with("a MoE model needs experts, top_k and expert_ffn");
  }
  if (moe.top_k > moe.experts) {
    // (Either may come from the preset: the message names the key given here.)
    const bool own_top_k = n.has("top_k");
    n.find(own_top_k ? "top_k" : "experts")
        .value_or(n)
        .fail_with(fmt::format("top_k {} {}is more than the {} experts", moe.top_k,
                               own_top_k ? "" : "(from the preset) ", moe.experts));
  }
  if (auto v = n.find("expert_load")) {
    if (!v->is_sequence()) v->fail("a list of non-negative numbers, one per routed expert");
    moe.expert_load.clear();
    double total = 0;
    for (const config::Node& item : v->items()) {
      moe.expert_load.push_back(item.as_double(0.0));
      total += moe.expert_load.back();
    }
    if (static_cast<std::int64_t>(moe.expert_load.size()) != moe.experts) {
      v->fail_with(fmt::format("{} loads for {} routed experts: give one per expert",
                               moe.expert_load.size(), moe.experts));
    }
    if (!(total > 0)) v->fail_with("every expert's load is zero: no token would be routed");
  }
}

void check_model(const config::Node& n, const ModelSpec& m) {
  if (m.layers <= 0 || m.hidden <= 0 || m.heads <= 0 || m.vocab <= 0) {
    n.fail_with("a model needs layers, hidden, heads and vocab (or a preset)");
  }
  if (m.kv_heads <= 0 || m.heads % m.kv_heads != 0) {
    n.fail_with(fmt::format("kv_heads {} must divide the {} attention heads", m.kv_heads, m.heads));
  }
  if (m.head_dim <= 0) {
    n.fail_with(
        fmt::format("hidden {} is not divisible by heads {}: give head_dim", m.hidden, m.heads));
  }
  if (m.ffn <= 0 && m.dense_layers() > 0) n.fail_with("the dense MLP needs ffn > 0");
  if (m.position == PositionKind::kLearned && m.max_positions <= 0) {
    n.fail_with("learned position embeddings need max_positions");
  }
  if (m.moe_enabled && m.moe.dense_layers >= m.layers) {
    n.fail_with(fmt::format("moe.dense_layers {} leaves no MoE layer among {} layers",
                            m.moe.dense_layers, m.layers));
  }
}

}  // namespace

ModelSpec parse_model(const config::Node& n) {
  if (n.is_scalar()) {
    const std::string name = n.as_choice(model_preset_names());
    return find_model_preset(name).value();
  }
  n.allow_keys({"preset", "name", "layers", "hidden", "heads", "kv_heads", "head_dim", "ffn",
                "gated_mlp", "vocab", "tied_embeddings", "bias", "dropout", "norm", "position",
                "max_positions", "mla", "moe"});
  ModelSpec m;
  if (auto p = n.find("preset")) {
    m = find_model_preset(p->as_choice(model_preset_names())).value();
    m.source += " (with overrides from the scenario)";
  } else {
    m.name = "custom";
    m.source = "inline in the scenario";
    m.norm = NormKind::kRmsNorm;
  }
  bool shape_changed = false;
  if (auto v = n.find("name")) m.name = v->as_string();
  // An operation names its layer in 15 bits (workloads/operation.hpp).
  if (auto v = n.find("layers")) m.layers = v->as_int(1, 32'767);
  if (auto v = n.find("hidden")) {
    m.hidden = v->as_int(1, kMaxDim);
    shape_changed = true;
  }
  if (auto v = n.find("heads")) {
    m.heads = v->as_int(1, kMaxDim);
    shape_changed = true;
    if (!n.has("kv_heads") && !n.has("preset")) m.kv_heads = m.heads;
  }
  if (auto v = n.find("kv_heads")) m.kv_heads = v->as_int(1, kMaxDim);
  if (!n.has("preset") && m.kv_heads == 0) m.kv_heads = m.heads;
  if (auto v = n.find("head_dim")) {
    m.head_dim = v->as_int(1, kMaxDim);
  } else if (shape_changed) {
    m.head_dim = (m.heads > 0 && m.hidden % m.heads == 0) ? m.hidden / m.heads : 0;
  }
  if (auto v = n.find("ffn")) {
    m.ffn = v->as_int(1, kMaxDim);
  } else if (!n.has("preset")) {
    m.ffn = 4 * m.hidden;
  }
  if (auto v = n.find("gated_mlp")) m.gated_mlp = v->as_bool();
  if (auto v = n.find("vocab")) m.vocab = v->as_int(1, 100'000'000);
  if (auto v = n.find("tied_embeddings")) m.tied_embeddings = v->as_bool();
  if (auto v = n.find("bias")) m.bias = v->as_bool();
  if (auto v = n.find("dropout")) {
    m.dropout = v->as_double(0.0, 1.0);
    if (m.dropout >= 1.0) v->fail("a dropout probability in [0, 1)");
  }
  if (auto v = n.find("norm")) {
    m.norm = v->as_choice({"layernorm", "rmsnorm"}) == "layernorm" ? NormKind::kLayerNorm
                                                                   : NormKind::kRmsNorm;
  }
  if (auto v = n.find("position")) {
    m.position = v->as_choice({"rotary", "learned"}) == "learned" ? PositionKind::kLearned
                                                                  : PositionKind::kRotary;
  }
  if (auto v = n.find("max_positions")) m.max_positions = v->as_int(1, 100'000'000);
  if (auto v = n.find("mla")) {
    if (v->is_scalar() && !v->as_bool()) {
      m.mla_enabled = false;
    } else {
      m.mla_enabled = true;
      read_mla(*v, m.mla);
    }
  }
  if (auto v = n.find("moe")) {
    if (v->is_scalar() && !v->as_bool()) {
      m.moe_enabled = false;
    } else {
      m.moe_enabled = true;
      read_moe(*v, m.moe);
    }
  }
  check_model(n, m);
  return m;
}

namespace {

std::array<OrderDim, 5> read_order(const config::Node& n) {
  const std::string text = n.as_string();
  std::vector<std::string> parts;
  std::stringstream ss(text);
  for (std::string part; std::getline(ss, part, '-');)
    parts.push_back(part);
  const std::array<std::string_view, 5> names = {"tp", "cp", "ep", "dp", "pp"};
  std::array<OrderDim, 5> order{};
  std::array<bool, 5> seen{};
  if (parts.size() != 5) n.fail("the five dimensions tp, cp, ep, dp, pp joined by '-', each once");
  for (std::size_t i = 0; i < 5; ++i) {
    const auto it = std::find(names.begin(), names.end(), parts[i]);
    if (it == names.end()) {
      n.fail_with(fmt::format("unknown dimension '{}' (expected tp, cp, ep, dp and pp)", parts[i]));
    }
    const auto d = static_cast<std::size_t>(it - names.begin());
    if (seen[d]) n.fail_with(fmt::format("dimension '{}' appears twice", parts[i]));
    seen[d] = true;
    order[i] = static_cast<OrderDim>(d);
  }
  return order;
}

ParallelLayout read_parallelism(const config::Node& n) {
  n.allow_keys({"tp", "pp", "dp", "ep", "cp", "sp", "tp_comm_overlap", "vpp", "zero", "schedule",
                "order", "cp_mode", "dualpipe_overlap", "dualpipe_comm_sm_share"});
  ParallelLayout p;
  auto dim = [&](const char* key, int& out) {
    if (auto v = n.find(key)) out = static_cast<int>(v->as_int(1, 1 << 20));
  };
  dim("tp", p.tp);
  dim("pp", p.pp);
  dim("dp", p.dp);
  dim("ep", p.ep);
  dim("cp", p.cp);
  dim("vpp", p.vpp);
  // An operation names its model chunk in 8 bits (workloads/operation.hpp).
  if (auto v = n.find("vpp"); v && p.vpp > 256) v->fail("an integer from 1 to 256");
  if (auto v = n.find("sp")) p.sp = v->as_bool();
  if (auto v = n.find("tp_comm_overlap")) p.tp_comm_overlap = v->as_bool();
  if (auto v = n.find("zero")) {
    if (v->is_scalar() && v->as_string() == "fsdp") {
      p.zero = 3;
    } else {
      p.zero = static_cast<int>(v->as_int(0, 3));
    }
  }
  p.schedule = PipelineSchedule::kOneFOneB;
  if (auto v = n.find("schedule")) {
    const std::string s = v->as_choice({"gpipe", "1f1b", "interleaved", "dualpipe"});
    p.schedule = s == "gpipe"         ? PipelineSchedule::kGpipe
                 : s == "1f1b"        ? PipelineSchedule::kOneFOneB
                 : s == "interleaved" ? PipelineSchedule::kInterleaved
                                      : PipelineSchedule::kDualPipe;
  } else if (p.vpp > 1) {
    p.schedule = PipelineSchedule::kInterleaved;
  }
  for (const char* key : {"dualpipe_overlap", "dualpipe_comm_sm_share"}) {
    if (auto v = n.find(key); v && p.schedule != PipelineSchedule::kDualPipe)
      v->fail_with(fmt::format("{} needs schedule: dualpipe", key));
  }
  if (auto v = n.find("dualpipe_overlap")) p.dualpipe_overlap = v->as_bool();
  if (auto v = n.find("dualpipe_comm_sm_share")) p.dualpipe_comm_sm_share = v->as_double(0.0, 0.9);
  if (auto v = n.find("cp_mode")) {
    p.cp_mode = v->as_choice({"ring", "ulysses"}) == "ring" ? CpMode::kRing : CpMode::kUlysses;
  }
  if (auto v = n.find("order")) p.order = read_order(*v);
  const std::int64_t world = static_cast<std::int64_t>(p.tp) * p.cp * p.dp * p.pp;
  if (world > (1 << 24)) n.fail_with(fmt::format("tp x cp x dp x pp = {} ranks is absurd", world));
  return p;
}

TrainingConfig read_training(const config::Node& n) {
  n.allow_keys({"seq_len", "micro_batch", "global_batch", "precision", "recompute", "grad_bucket",
                "grad_reduce_dtype", "overlap_grad_reduce", "overlap_param_gather",
                "routing_skew"});
  TrainingConfig t;
  t.seq_len = n.at("seq_len").as_int(1, 1 << 26);
  if (auto v = n.find("micro_batch")) t.micro_batch = v->as_int(1, 1 << 20);
  t.global_batch = n.at("global_batch").as_int(1, 1 << 30);
  if (auto v = n.find("precision")) {
    const std::string s = v->as_choice({"bf16", "fp16", "fp8", "fp32"});
    t.precision = s == "bf16"   ? Precision::kBf16
                  : s == "fp16" ? Precision::kFp16
                  : s == "fp8"  ? Precision::kFp8
                                : Precision::kFp32;
  }
  if (auto v = n.find("recompute")) {
    const std::string s = v->as_choice({"none", "selective", "full", "norm_and_mla_up"});
    t.recompute = s == "none"        ? Recompute::kNone
                  : s == "selective" ? Recompute::kSelective
                  : s == "full"      ? Recompute::kFull
                                     : Recompute::kNormAndMlaUp;
  }
  if (auto v = n.find("grad_bucket")) t.grad_bucket = v->as_bytes(Bytes(1));
  // FP8 training keeps weights (and so gradients) in BF16 (element_bytes).
  t.grad_reduce = t.precision == Precision::kFp8 ? Precision::kBf16 : t.precision;
  if (auto v = n.find("grad_reduce_dtype")) {
    const std::string s = v->as_choice({"fp32", "bf16", "fp16"});
    t.grad_reduce = s == "fp32"   ? Precision::kFp32
                    : s == "bf16" ? Precision::kBf16
                                  : Precision::kFp16;
  }
  if (auto v = n.find("overlap_grad_reduce")) t.overlap_grad_reduce = v->as_bool();
  if (auto v = n.find("overlap_param_gather")) t.overlap_param_gather = v->as_bool();
  if (auto v = n.find("routing_skew")) t.routing_skew = v->as_double(0.0, 100.0);
  return t;
}

}  // namespace

void check_model_split(const config::Node& n, const ModelSpec& m, int tp, int ep) {
  auto key = [&](const char* k) { return n.find(k).value_or(n); };
  if (m.dense_layers() > 0 && m.ffn % tp != 0) {
    key("tp").fail_with(fmt::format("tp {} must divide the MLP size {} of {}", tp, m.ffn, m.name));
  }
  if (ep > 1 && !m.moe_enabled) {
    key("ep").fail_with(
        fmt::format("ep {} needs a mixture-of-experts model; {} is dense", ep, m.name));
  }
  if (m.moe_enabled && m.moe.experts % ep != 0) {
    key("ep").fail_with(
        fmt::format("ep {} must divide the {} experts of {}", ep, m.moe.experts, m.name));
  }
}

namespace {

// Tensor and expert parallelism against the model: heads, key/value heads, experts.
void check_model_parallel_split(const config::Node& par, const ModelSpec& m,
                                const ParallelLayout& p) {
  auto key = [&](const char* k) { return par.find(k).value_or(par); };
  if (m.heads % p.tp != 0) {
    key("tp").fail_with(fmt::format(
        "tp {} must divide the {} attention heads of {} (Megatron splits heads among tensor-"
        "parallel ranks)",
        p.tp, m.heads, m.name));
  }
  if (!m.mla_enabled && m.kv_heads % p.tp != 0) {
    key("tp").fail_with(
        fmt::format("tp {} must divide the {} key/value heads of {}", p.tp, m.kv_heads, m.name));
  }
  check_model_split(par, m, p.tp, p.ep);
  if ((static_cast<std::int64_t>(p.tp) * p.cp * p.dp) % p.ep != 0) {
    key("ep").fail_with(fmt::format(
        "ep {} must divide tp x cp x dp = {} (expert-parallel groups are carved out of the ranks "
        "of one pipeline stage)",
        p.ep, p.tp * p.cp * p.dp));
  }
}

// Sequence and context parallelism against the model and the sequence length.
void check_sequence_split(const config::Node& par, const ModelSpec& m, const ParallelLayout& p,
                          const TrainingConfig& t) {
  auto key = [&](const char* k) { return par.find(k).value_or(par); };
  if (p.tp_comm_overlap && p.tp > 1 && !p.sp) {
    key("tp_comm_overlap")
        .fail_with(
            "tp_comm_overlap needs sp: true (Megatron-LM overlaps the sequence-parallel "
            "AllGather and ReduceScatter with the GEMMs)");
  }
  if (m.moe_enabled && p.tp > 1 && !p.sp) {
    key("sp").fail_with(
        "a MoE model with tp > 1 needs sp: true (Megatron-LM requires sequence parallelism "
        "when experts and tensor parallelism are combined)");
  }
  const std::int64_t cp_divisor = p.cp_mode == CpMode::kRing && p.cp > 1 ? 2 * p.cp : p.cp;
  if (t.seq_len % cp_divisor != 0) {
    key("cp").fail_with(fmt::format(
        "training.seq_len {} must be divisible by {} ({})", t.seq_len, cp_divisor,
        p.cp_mode == CpMode::kRing ? "2 x cp: ring attention splits the sequence into 2 x cp "
                                     "chunks for causal load balance"
                                   : "cp"));
  }
  if (p.cp > 1 && p.cp_mode == CpMode::kUlysses) {
    const std::int64_t local_kv = m.mla_enabled ? m.heads / p.tp : m.kv_heads / p.tp;
    if ((m.heads / p.tp) % p.cp != 0 || local_kv % p.cp != 0) {
      key("cp").fail_with(fmt::format(
          "Ulysses cp {} must divide the heads per tensor-parallel rank ({} query, {} key/value "
          "heads)",
          p.cp, m.heads / p.tp, local_kv));
    }
  }
  if (p.sequence_parallel() && (t.seq_len / p.cp) % p.tp != 0) {
    key("sp").fail_with(fmt::format(
        "sequence parallelism needs the sequence per context-parallel rank ({}) divisible by "
        "tp {}",
        t.seq_len / p.cp, p.tp));
  }
}

// The pipeline schedule against the layout and the model's layers.
void check_pipeline(const config::Node& par, const ModelSpec& m, const ParallelLayout& p) {
  auto key = [&](const char* k) { return par.find(k).value_or(par); };
  if (p.schedule == PipelineSchedule::kInterleaved && (p.vpp < 2 || p.pp < 2)) {
    key("schedule")
        .fail_with(
            fmt::format("the interleaved schedule needs pp >= 2 and vpp >= 2 (got pp {}, vpp {})",
                        p.pp, p.vpp));
  }
  if (p.schedule != PipelineSchedule::kInterleaved && p.vpp > 1) {
    key("vpp").fail_with(fmt::format("vpp {} needs schedule: interleaved", p.vpp));
  }
  if (p.schedule == PipelineSchedule::kDualPipe && (p.pp < 2 || p.pp % 2 != 0)) {
    key("pp").fail_with(fmt::format(
        "DualPipe needs an even pp >= 2 (it pairs rank s with rank pp - 1 - s); got pp {}", p.pp));
  }
  const std::int64_t stages = static_cast<std::int64_t>(p.pp) * p.vpp;
  if (stages > m.layers) {
    key(p.vpp > 1 ? "vpp" : "pp")
        .fail_with(
            fmt::format("pp x vpp = {} pipeline stages for {} layers: a stage would have no layer",
                        stages, m.layers));
  }
}

// The micro-batches a step has (global_batch / (micro_batch x dp)) against the schedule.
void check_micro_batches(const config::Node& tr, const ParallelLayout& p, const TrainingConfig& t) {
  const std::int64_t per_step = t.micro_batch * p.dp;
  if (t.global_batch % per_step != 0) {
    tr.at("global_batch")
        .fail_with(
            fmt::format("global batch {} is not divisible by micro_batch x dp = {} x {} = {}",
                        t.global_batch, t.micro_batch, p.dp, per_step));
  }
  const std::int64_t m_count = t.global_batch / per_step;
  if (p.schedule == PipelineSchedule::kDualPipe && (m_count % 2 != 0 || m_count < 2 * p.pp)) {
    tr.at("global_batch")
        .fail_with(fmt::format(
            "DualPipe needs an even number of micro-batches, at least 2 x pp = {} (half enter at "
            "each end of the pipeline); global_batch / (micro_batch x dp) = {}",
            2 * p.pp, m_count));
  }
  if (p.schedule == PipelineSchedule::kInterleaved && m_count % p.pp != 0) {
    tr.at("global_batch")
        .fail_with(fmt::format(
            "the interleaved schedule needs the number of micro-batches ({} = global_batch / "
            "(micro_batch x dp)) divisible by pp {}",
            m_count, p.pp));
  }
}

// Layout checks that need the model and the training settings; each names the key at fault.
void check_layout(const config::Node& par, const config::Node& tr, const ModelSpec& m,
                  const ParallelLayout& p, const TrainingConfig& t) {
  check_model_parallel_split(par, m, p);
  check_sequence_split(par, m, p, t);
  check_pipeline(par, m, p);
  check_micro_batches(tr, p, t);
}

// With expert TP = 1, the expert decomposition (order without cp) must put every rank in the same
// pipeline stage as the dense one, else an expert group would span stages.
void check_expert_order(const config::Node& par, const ParallelLayout& p) {
  if (p.ep == 1) return;
  auto strides = [&](bool expert) {
    std::array<std::int64_t, 5> size{};
    size[static_cast<int>(OrderDim::kTp)] = expert ? 1 : p.tp;
    size[static_cast<int>(OrderDim::kCp)] = expert ? 1 : p.cp;
    size[static_cast<int>(OrderDim::kEp)] = expert ? p.ep : 1;
    size[static_cast<int>(OrderDim::kDp)] = expert ? p.expert_dp() : p.dp;
    size[static_cast<int>(OrderDim::kPp)] = p.pp;
    std::int64_t stride = 1;
    std::array<std::int64_t, 5> out{};
    for (OrderDim d : p.order) {
      out[static_cast<int>(d)] = stride;
      stride *= size[static_cast<int>(d)];
    }
    return out[static_cast<int>(OrderDim::kPp)];
  };
  if (strides(false) != strides(true)) {
    par.find("order").value_or(par).fail_with(
        "with ep > 1 the order must give pp the same position for dense and expert groups (put "
        "pp outermost, as in the default tp-cp-ep-dp-pp)");
  }
}

}  // namespace

WorkloadSpec parse_workload(const config::Node& root) {
  WorkloadSpec spec;
  spec.model = parse_model(root.at("model"));
  const config::Node par = root.at("parallelism");
  spec.parallel = read_parallelism(par);
  spec.parallelism_location = par.location();
  const config::Node tr = root.at("training");
  spec.training = read_training(tr);
  spec.compute = parse_compute(root.at("compute"), spec.training.precision);
  check_layout(par, tr, spec.model, spec.parallel, spec.training);
  if (!spec.model.moe.expert_load.empty() && spec.training.routing_skew > 0) {
    tr.at("routing_skew")
        .fail_with("model.moe.expert_load already sets each expert's load: drop routing_skew");
  }
  check_expert_order(par, spec.parallel);
  return spec;
}

void validate_layout(const WorkloadSpec& spec, int world_size) {
  const ParallelLayout& p = spec.parallel;
  if (p.world_size() != world_size) {
    throw InputError(fmt::format(
        "{}: parallelism: tp x cp x dp x pp = {} x {} x {} x {} = {} ranks, but the topology has "
        "{} accelerators",
        spec.parallelism_location, p.tp, p.cp, p.dp, p.pp, p.world_size(), world_size));
  }
  const MoeShape& moe = spec.model.moe;
  const bool grouped = moe.max_nodes_per_token > 0 || moe.dispatch == ExpertDispatch::kRelayed;
  if (!spec.model.moe_enabled || p.ep == 1 || !grouped) return;
  if (moe.dispatch == ExpertDispatch::kRelayed && moe.capacity_factor > 0) {
    throw InputError(fmt::format(
        "{}: model: moe.dispatch relayed needs dropless routing (capacity_factor 0), as "
        "DeepSeek-V3 trains; got capacity_factor {}",
        spec.parallelism_location, moe.capacity_factor));
  }
  if (!spec.rank_domains.empty() &&
      spec.rank_domains.size() != static_cast<std::size_t>(world_size)) {
    throw std::logic_error("validate_layout: one scale-up domain per rank");
  }
  const std::vector<int> domains =
      expert_group_domains(RankMap(p), spec.rank_domains, spec.parallelism_location);
  std::map<int, int> per_domain;
  for (int d : domains)
    ++per_domain[d];
  for (const auto& [d, count] : per_domain) {
    if (count != per_domain.begin()->second) {
      throw InputError(fmt::format(
          "{}: parallelism: ep {} puts {} expert ranks on one scale-up domain and {} on another; "
          "moe.max_nodes_per_token and moe.dispatch relayed need the same number on each",
          spec.parallelism_location, p.ep, per_domain.begin()->second, count));
    }
  }
  const auto nodes = static_cast<std::int64_t>(per_domain.size());
  if (moe.max_nodes_per_token > 0 && moe.max_nodes_per_token < nodes && nodes > 64) {
    throw InputError(fmt::format(
        "{}: model: moe.max_nodes_per_token {} over {} scale-up domains: the routing model "
        "enumerates node choices over at most 64",
        spec.parallelism_location, moe.max_nodes_per_token, nodes));
  }
}

}  // namespace stepsim::workloads
