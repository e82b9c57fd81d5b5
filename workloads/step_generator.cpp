#include "workloads/step_generator.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <stdexcept>

#include "workloads/expert_routing.hpp"
#include "workloads/memory_model.hpp"
#include "workloads/pipeline_schedule.hpp"

namespace stepsim::workloads {

namespace {

constexpr std::uint32_t kNone = 0xFFFFFFFFu;

double d(std::int64_t v) {
  return static_cast<double>(v);
}

// Up to two operations whose completion the next operation needs.
struct Frontier {
  std::uint32_t a = kNone;
  std::uint32_t b = kNone;
};

// Parameter counts (per rank) of the pieces of one layer, whose gradients the backward
// operations produce.
struct LayerParams {
  double qkv = 0;  // attention projections except the output one, latent norms, biases
  double attn_out = 0;
  double norm = 0;  // one norm
  double mlp_up = 0;
  double mlp_down = 0;
  double router = 0;
  double shared = 0;   // shared experts (replicated over tensor-parallel ranks)
  double experts = 0;  // the rank's routed experts
  double dense_total() const {
    return qkv + attn_out + 2 * norm + mlp_up + mlp_down + router + shared;
  }
};

// Accumulates gradients into buckets (Megatron-LM's DistributedDataParallel, PyTorch DDP): a
// bucket's collective is issued once it holds `limit` bytes, after the backward operation that
// produced its last gradient.
struct Bucket {
  std::int64_t bytes = 0;
  std::uint32_t last_producer = kNone;
};

class Generator {
 public:
  Generator(const WorkloadSpec& spec, int stage)
      : spec_(spec), m_(spec.model), p_(spec.parallel), t_(spec.training), stage_(stage) {
    eb_ = element_bytes(t_.precision);
    tp_ = p_.tp;
    sp_ = p_.sequence_parallel();
    s_local_ = t_.seq_len / p_.cp;
    tokens_ = t_.micro_batch * s_local_;
    tokens_sp_ = sp_ ? tokens_ / tp_ : tokens_;
    act_bytes_ = tokens_ * m_.hidden * eb_;
    virtual_stages_ = p_.pp * p_.vpp;
    stage_layers_ = layers_per_virtual_stage(m_.layers, virtual_stages_);
    first_layer_.assign(stage_layers_.size() + 1, 0);
    for (std::size_t i = 0; i < stage_layers_.size(); ++i) {
      first_layer_[i + 1] = first_layer_[i] + stage_layers_[i];
    }
    dense_group_size_ = p_.dp * p_.cp;
    expert_group_size_ = p_.expert_dp();
    const std::int64_t cf_tokens = tokens_sp_ * (m_.moe_enabled ? m_.moe.top_k : 0);
    const double cf = m_.moe.capacity_factor > 0 ? m_.moe.capacity_factor : 1.0;
    routed_tokens_ = m_.moe.capacity_factor > 0 ? std::llround(d(cf_tokens) * cf) : cf_tokens;
    a2a_bytes_ = routed_tokens_ * m_.hidden * eb_;
    skewed_ = p_.ep > 1 && t_.routing_skew > 0 && m_.moe.capacity_factor <= 0;
    tp_overlap_ = sp_ && p_.tp_comm_overlap;
  }

  // ZeRO-1/2 with overlap_param_gather: the parameter buckets of the previous step's optimizer,
  // gathered at the start of this step (from a first generation of the same program).
  void gather_at_start(std::vector<std::pair<std::int64_t, GroupKind>> buckets) {
    start_gathers_ = std::move(buckets);
  }
  std::vector<std::pair<std::int64_t, GroupKind>> closed_buckets() const {
    std::vector<std::pair<std::int64_t, GroupKind>> v;
    for (const auto& b : closed_)
      v.emplace_back(b.bytes, b.group);
    return v;
  }

  Program run() {
    // Megatron gathers the buckets in forward order (the reverse of the order the backward
    // closed them) while the forward runs; the first forward waits for the first bucket.
    for (auto it = start_gathers_.rbegin(); it != start_gathers_.rend(); ++it) {
      const std::uint32_t op =
          collective(OpName::kZeroParamGather, Phase::kOptimizer, kNoLayer,
                     CollectiveKind::kAllGather, it->second, ParallelDim::kDp, it->first, {});
      if (start_gate_ == kNone) start_gate_ = op;
    }
    const std::int64_t micro_batches = spec_.micro_batches();
    const auto steps = pipeline_order(p_.schedule, p_.pp, stage_, p_.vpp, micro_batches);
    std::vector<std::size_t> last_backward(static_cast<std::size_t>(p_.vpp), 0);
    for (std::size_t i = 0; i < steps.size(); ++i) {
      if (!steps[i].forward) last_backward[static_cast<std::size_t>(steps[i].chunk)] = i;
    }
    for (std::size_t i = 0; i < steps.size(); ++i) {
      const PipelineStep& st = steps[i];
      if (st.forward) {
        forward_pass(st.micro_batch, st.chunk);
      } else {
        backward_pass(st.micro_batch, st.chunk,
                      last_backward[static_cast<std::size_t>(st.chunk)] == i);
      }
    }
    optimizer();
    return std::move(program_);
  }

 private:
  // ---- building blocks ----

  std::uint32_t add(Op op, std::initializer_list<std::uint32_t> deps) {
    op.dep_begin = static_cast<std::uint32_t>(program_.deps.size());
    for (std::uint32_t dep : deps) {
      if (dep == kNone) continue;
      if (std::find(program_.deps.begin() + op.dep_begin, program_.deps.end(), dep) !=
          program_.deps.end()) {
        continue;
      }
      program_.deps.push_back(dep);
    }
    op.dep_count = static_cast<std::uint16_t>(program_.deps.size() - op.dep_begin);
    op.micro_batch = mb_;
    op.chunk = static_cast<std::uint8_t>(chunk_);
    program_.ops.push_back(op);
    return static_cast<std::uint32_t>(program_.ops.size() - 1);
  }

  std::uint32_t compute(OpName name, Phase phase, std::int64_t layer, ComputeKind kind,
                        double flops, double bytes, std::initializer_list<std::uint32_t> deps) {
    Op op;
    op.kind = OpKind::kCompute;
    op.stream = Stream::kCompute;
    op.name = name;
    op.phase = phase;
    op.layer = static_cast<std::int16_t>(layer);
    op.compute = kind;
    op.flops = flops;
    op.bytes = std::llround(bytes);
    op.duration = spec_.compute.duration(name, phase, kind, flops, bytes);
    return add(op, deps);
  }

  static Stream stream_of(GroupKind g) {
    switch (g) {
      case GroupKind::kTensor:
        return Stream::kTp;
      case GroupKind::kContext:
        return Stream::kCp;
      case GroupKind::kExpert:
        return Stream::kEp;
      case GroupKind::kPipeline:
        return Stream::kPp;
      case GroupKind::kData:
      case GroupKind::kExpertData:
      case GroupKind::kCount:
        break;
    }
    return Stream::kDp;
  }

  std::uint32_t collective(OpName name, Phase phase, std::int64_t layer, CollectiveKind kind,
                           GroupKind group, ParallelDim dim, std::int64_t bytes,
                           std::initializer_list<std::uint32_t> deps,
                           std::uint32_t matrix = kNoMatrix) {
    Op op;
    op.kind = OpKind::kCollective;
    op.stream = stream_of(group);
    op.name = name;
    op.phase = phase;
    op.layer = static_cast<std::int16_t>(layer);
    op.collective = kind;
    op.group = group;
    op.dim = dim;
    op.bytes = bytes;
    op.matrix = matrix;
    op.seq = group_seq_[static_cast<std::size_t>(group)]++;
    return add(op, deps);
  }

  std::uint32_t p2p(bool send, OpName name, Phase phase, GroupKind group, int offset,
                    std::int64_t bytes, std::uint32_t tag,
                    std::initializer_list<std::uint32_t> deps) {
    Op op;
    op.kind = send ? OpKind::kSend : OpKind::kRecv;
    op.collective = send ? CollectiveKind::kSend : CollectiveKind::kRecv;
    const bool pipeline = group == GroupKind::kPipeline;
    op.stream =
        pipeline ? (send ? Stream::kPp : Stream::kPpRecv) : (send ? Stream::kCp : Stream::kCpRecv);
    op.dim = pipeline ? ParallelDim::kPp : ParallelDim::kCp;
    op.name = name;
    op.phase = phase;
    op.group = group;
    op.peer_offset = static_cast<std::int8_t>(offset);
    op.bytes = bytes;
    op.seq = tag;
    return add(op, deps);
  }

  // Tensor-parallel communication of a b x s' x h activation after a row-parallel layer (or in
  // the backward of a column-parallel one): AllReduce, or ReduceScatter with SP. Identity at tp 1.
  std::uint32_t tp_reduce(Phase phase, std::int64_t layer, std::uint32_t dep) {
    if (tp_ == 1) return dep;
    if (sp_) {
      return collective(OpName::kSpReduceScatter, phase, layer, CollectiveKind::kReduceScatter,
                        GroupKind::kTensor, ParallelDim::kSp, act_bytes_, {dep});
    }
    return collective(OpName::kTpAllReduce, phase, layer, CollectiveKind::kAllReduce,
                      GroupKind::kTensor, ParallelDim::kTp, act_bytes_, {dep});
  }
  // The AllGather SP needs before a column-parallel layer (or in the backward of a row-parallel
  // one); the identity without SP.
  std::uint32_t sp_gather(Phase phase, std::int64_t layer, std::uint32_t dep) {
    if (!sp_) return dep;
    return collective(OpName::kSpAllGather, phase, layer, CollectiveKind::kAllGather,
                      GroupKind::kTensor, ParallelDim::kSp, act_bytes_, {dep});
  }

  double gemm_bytes(double tokens, double in, double out, double weights) const {
    return (tokens * in + weights + tokens * out) * d(eb_);
  }
  double norm_bytes() const { return 2.0 * d(tokens_sp_ * m_.hidden * eb_); }

  LayerParams layer_params(std::int64_t layer) const {
    const ParameterCount c = count_parameters(m_);
    LayerParams lp;
    const double out_w = d(m_.attn_out_width() * m_.hidden);
    lp.attn_out = out_w / tp_;
    lp.qkv = (c.attention - out_w) / tp_;
    lp.norm = c.norms / 2;
    if (m_.is_moe_layer(layer)) {
      lp.router = c.router;
      lp.shared = d(m_.moe.shared_experts) * c.expert;
      lp.experts = d(m_.moe.experts / p_.ep) * c.expert;
    } else {
      const double up_share = m_.gated_mlp ? 2.0 / 3.0 : 0.5;
      lp.mlp_up = c.dense_mlp * up_share / tp_;
      lp.mlp_down = c.dense_mlp * (1 - up_share) / tp_;
    }
    return lp;
  }

  // Rows of the embedding/output table on this rank (vocab-parallel, padded to a multiple of tp).
  double vocab_local() const { return d((m_.vocab + tp_ - 1) / tp_); }
  double embedding_params() const {
    double v = vocab_local() * d(m_.hidden);
    if (m_.position == PositionKind::kLearned) v += d(m_.max_positions * m_.hidden);
    return v;
  }
  // The output layer's own weights on the last stage: untied, or tied with the embedding on
  // another stage (Megatron keeps a copy of the word embeddings on the last stage).
  double head_params() const {
    const bool own = !m_.tied_embeddings || virtual_stages_ > 1;
    return own ? vocab_local() * d(m_.hidden) : 0.0;
  }

  // ---- ZeRO-3 parameter gathers ----

  void zero3_gather(Phase phase, std::int64_t layer, double dense_params, double expert_params,
                    std::uint32_t dep, Frontier& out) {
    if (p_.zero != 3) return;
    if (dense_group_size_ > 1 && dense_params > 0) {
      out.a = collective(OpName::kZeroParamGather, phase, layer, CollectiveKind::kAllGather,
                         GroupKind::kData, ParallelDim::kDp, std::llround(dense_params * d(eb_)),
                         {dep});
    }
    if (expert_group_size_ > 1 && expert_params > 0) {
      out.b = collective(OpName::kZeroParamGather, phase, layer, CollectiveKind::kAllGather,
                         GroupKind::kExpertData, ParallelDim::kDp,
                         std::llround(expert_params * d(eb_)), {dep});
    }
  }

  // The gather for `layer` in this pass: issued one layer ahead (FSDP's prefetch) when
  // overlap_param_gather is on, else right before the layer, after the previous one finished.
  Frontier layer_gather(Phase phase, std::int64_t layer, std::uint32_t prev_done) {
    Frontier f;
    if (p_.zero != 3) return f;
    const std::int64_t key = layer * 2 + (phase == Phase::kBackward ? 1 : 0);
    if (t_.overlap_param_gather && prefetched_key_ == key) return prefetched_;
    const LayerParams lp = layer_params(layer);
    zero3_gather(phase, layer, lp.dense_total(), lp.experts, prev_done, f);
    return f;
  }
  void prefetch(Phase phase, std::int64_t next_layer, std::uint32_t after) {
    if (p_.zero != 3 || !t_.overlap_param_gather) return;
    prefetched_ = Frontier{};
    const LayerParams lp = layer_params(next_layer);
    zero3_gather(phase, next_layer, lp.dense_total(), lp.experts, after, prefetched_);
    prefetched_key_ = next_layer * 2 + (phase == Phase::kBackward ? 1 : 0);
  }

  // ---- gradients ----

  void gradient(std::uint32_t producer, double params, bool expert) {
    if (params <= 0) return;
    if (!grad_sync_) return;
    const int size = expert ? expert_group_size_ : dense_group_size_;
    if (size <= 1) return;
    Bucket& b = expert ? expert_bucket_ : dense_bucket_;
    b.bytes += std::llround(params * d(eb_));
    b.last_producer = producer;
    if (b.bytes >= t_.grad_bucket.count()) close_bucket(expert);
  }

  void close_bucket(bool expert) {
    Bucket& b = expert ? expert_bucket_ : dense_bucket_;
    if (b.bytes == 0) return;
    const GroupKind g = expert ? GroupKind::kExpertData : GroupKind::kData;
    closed_.push_back({b.bytes, g});
    if (t_.overlap_grad_reduce) emit_bucket(closed_.back(), b.last_producer);
    b = Bucket{};
  }

  struct ClosedBucket {
    std::int64_t bytes;
    GroupKind group;
  };

  void emit_bucket(const ClosedBucket& b, std::uint32_t dep) {
    const CollectiveKind kind =
        p_.zero == 0 ? CollectiveKind::kAllReduce : CollectiveKind::kReduceScatter;
    bucket_ops_.push_back(collective(OpName::kDpGradients, Phase::kBackward, kNoLayer, kind,
                                     b.group, ParallelDim::kDp, b.bytes, {dep}));
  }

  // ---- attention core with context parallelism ----

  // `also`: a second operation the core waits for (the SP AllGather under tp_comm_overlap).
  std::uint32_t attention_core(Phase phase, std::int64_t layer, std::uint32_t dep,
                               std::uint32_t also = kNone) {
    const LayerFlops f = layer_flops_per_token(m_, layer, t_.seq_len);
    const bool backward = phase == Phase::kBackward;
    const double factor = backward ? 2.0 : 1.0;
    const double flops = factor * d(tokens_) * f.attention_core / tp_;
    const double width = d(m_.q_width() + m_.kv_width() + 2 * m_.attn_out_width()) / tp_;
    const double bytes = factor * d(tokens_) * width * d(eb_);
    if (p_.cp == 1) {
      return compute(OpName::kAttentionCore, phase, layer, ComputeKind::kAttention, flops, bytes,
                     {dep, also});
    }
    if (p_.cp_mode == CpMode::kUlysses) {
      // Heads are scattered and the sequence gathered before attention, and back after
      // (DeepSpeed-Ulysses); backward sends the gradients the same way.
      const std::int64_t qkv_bytes =
          tokens_ * (m_.q_width() + m_.kv_width() + m_.attn_out_width()) / tp_ * eb_;
      const std::int64_t out_bytes = tokens_ * m_.attn_out_width() / tp_ * eb_;
      const std::uint32_t in = collective(
          OpName::kCpAllToAll, phase, layer, CollectiveKind::kAllToAll, GroupKind::kContext,
          ParallelDim::kCp, backward ? out_bytes : qkv_bytes, {dep, also});
      const std::uint32_t core = compute(OpName::kAttentionCore, phase, layer,
                                         ComputeKind::kAttention, flops, bytes, {in});
      return collective(OpName::kCpAllToAll, phase, layer, CollectiveKind::kAllToAll,
                        GroupKind::kContext, ParallelDim::kCp, backward ? qkv_bytes : out_bytes,
                        {core});
    }
    // Ring attention (Megatron-LM/Transformer Engine): cp steps, each on one block of keys and
    // values; the block for step j+1 arrives from the previous rank while step j computes.
    // Backward circulates the key/value blocks and their gradients (twice the bytes).
    const std::int64_t kv_bytes =
        tokens_ * (m_.kv_width() + m_.attn_out_width()) / tp_ * eb_ * (backward ? 2 : 1);
    std::uint32_t block = compute(OpName::kAttentionCore, phase, layer, ComputeKind::kAttention,
                                  flops / p_.cp, bytes / p_.cp, {dep, also});
    std::uint32_t received = kNone;
    for (int j = 0; j + 1 < p_.cp; ++j) {
      const std::uint32_t tag = cp_tag_++;
      p2p(true, OpName::kCpKvExchange, phase, GroupKind::kContext, +1, kv_bytes, tag,
          {j == 0 ? dep : received});
      received = p2p(false, OpName::kCpKvExchange, phase, GroupKind::kContext, -1, kv_bytes, tag,
                     {j == 0 ? dep : received});
      block = compute(OpName::kAttentionCore, phase, layer, ComputeKind::kAttention, flops / p_.cp,
                      bytes / p_.cp, {received, block});
    }
    return block;
  }

  // ---- one layer ----

  // Forward (or recomputed forward) of `layer`; returns what the next operation waits for.
  Frontier layer_forward(std::int64_t layer, Phase phase, Frontier in) {
    const LayerFlops f = layer_flops_per_token(m_, layer, t_.seq_len);
    const double T = d(tokens_);
    const double h = d(m_.hidden);
    Frontier gather;
    if (phase == Phase::kForward) gather = layer_gather(Phase::kForward, layer, in.a);
    const std::uint32_t n1 =
        compute(OpName::kNorm, phase, layer, ComputeKind::kElementwise, 5.0 * d(tokens_sp_) * h,
                norm_bytes(), {in.a, in.b, gather.a, gather.b});
    if (phase == Phase::kForward && layer + 1 < layer_end_)
      prefetch(Phase::kForward, layer + 1, n1);
    // With tp_comm_overlap a GEMM and its SP collective start together (both after the GEMM's
    // input), and what follows waits for both: the pair takes max(GEMM, communication).
    const std::uint32_t x = sp_gather(phase, layer, n1);
    const double qkv_w = f.qkv / 2.0;
    const std::uint32_t q =
        compute(OpName::kQkv, phase, layer, ComputeKind::kGemm, T * f.qkv / tp_,
                gemm_bytes(T, h, d(m_.q_width() + 2 * m_.kv_width()) / tp_, qkv_w / tp_),
                {tp_overlap_ ? n1 : x});
    const std::uint32_t core = attention_core(phase, layer, q, tp_overlap_ ? x : kNone);
    const double out_w = f.attention_out / 2.0;
    const std::uint32_t o =
        compute(OpName::kAttentionOut, phase, layer, ComputeKind::kGemm, T * f.attention_out / tp_,
                gemm_bytes(T, d(m_.attn_out_width()) / tp_, h, out_w / tp_), {core});
    const std::uint32_t r = tp_reduce(phase, layer, tp_overlap_ ? core : o);
    const std::uint32_t n2 =
        compute(OpName::kNorm, phase, layer, ComputeKind::kElementwise, 5.0 * d(tokens_sp_) * h,
                norm_bytes(), {r, tp_overlap_ ? o : kNone});
    if (m_.is_moe_layer(layer)) return moe_forward(layer, phase, f, n2);
    const std::uint32_t x2 = sp_gather(phase, layer, n2);
    const std::uint32_t up = compute(
        OpName::kMlpUp, phase, layer, ComputeKind::kGemm, T * f.mlp_up / tp_,
        gemm_bytes(T, h, f.mlp_up / 2.0 / h / tp_, f.mlp_up / 2.0 / tp_), {tp_overlap_ ? n2 : x2});
    const std::uint32_t down = compute(
        OpName::kMlpDown, phase, layer, ComputeKind::kGemm, T * f.mlp_down / tp_,
        gemm_bytes(T, d(m_.ffn) / tp_, h, f.mlp_down / 2.0 / tp_), {up, tp_overlap_ ? x2 : kNone});
    if (tp_overlap_) return {tp_reduce(phase, layer, up), down};
    return {tp_reduce(phase, layer, down), kNone};
  }

  std::uint32_t expert_a2a(OpName name, Phase phase, std::int64_t layer, bool dispatch_pattern,
                           std::uint32_t dep) {
    if (p_.ep == 1) return dep;
    return collective(name, phase, layer,
                      skewed_ ? CollectiveKind::kAllToAllv : CollectiveKind::kAllToAll,
                      GroupKind::kExpert, ParallelDim::kEp, a2a_bytes_, {dep},
                      skewed_ ? (dispatch_pattern ? 0u : 1u) : kNoMatrix);
  }

  Frontier moe_forward(std::int64_t layer, Phase phase, const LayerFlops& f, std::uint32_t n2) {
    const double T = d(tokens_sp_);
    const double h = d(m_.hidden);
    const double ffn = d(m_.moe.expert_ffn) * (m_.gated_mlp ? 3.0 : 2.0);
    const std::uint32_t router =
        compute(OpName::kRouter, phase, layer, ComputeKind::kGemm, T * f.router,
                gemm_bytes(T, h, d(m_.moe.experts), h * d(m_.moe.experts)), {n2});
    const std::uint32_t dispatch = expert_a2a(OpName::kEpDispatch, phase, layer, true, router);
    std::uint32_t shared = kNone;
    if (m_.moe.shared_experts > 0) {
      shared =
          compute(OpName::kSharedExperts, phase, layer, ComputeKind::kGemm, T * f.shared_experts,
                  d(m_.moe.shared_experts) * gemm_bytes(T, h, d(m_.moe.expert_ffn), h * ffn), {n2});
    }
    // Each rank computes, on average, its own tokens' share of routed work (top-k experts).
    const double routed = d(routed_tokens_);
    const std::uint32_t experts =
        compute(OpName::kExperts, phase, layer, ComputeKind::kGroupedGemm,
                routed * f.routed_experts / d(m_.moe.top_k),
                gemm_bytes(routed, h, d(m_.moe.expert_ffn), d(m_.moe.experts / p_.ep) * h * ffn),
                {dispatch});
    const std::uint32_t combine = expert_a2a(OpName::kEpCombine, phase, layer, false, experts);
    return {combine, shared};
  }

  Frontier layer_backward(std::int64_t layer, Frontier in) {
    const LayerFlops f = layer_flops_per_token(m_, layer, t_.seq_len);
    const LayerParams lp = layer_params(layer);
    const double T = d(tokens_);
    const double h = d(m_.hidden);
    const Phase bwd = Phase::kBackward;
    const Frontier gather = layer_gather(bwd, layer, in.a);
    if (layer > layer_begin_) prefetch(bwd, layer - 1, in.a);
    Frontier start = in;
    if (t_.recompute == Recompute::kFull) {
      // Megatron's full (uniform, 1 layer) recomputation: the layer's forward runs again,
      // communication included, right before its backward.
      const Frontier redo = layer_forward(layer, Phase::kRecompute, {in.a, gather.a});
      start = {redo.a, redo.b};
    }
    std::uint32_t mlp_in;
    if (m_.is_moe_layer(layer)) {
      const double Tm = d(tokens_sp_);
      const double ffn = d(m_.moe.expert_ffn) * (m_.gated_mlp ? 3.0 : 2.0);
      const std::uint32_t combine_b = expert_a2a(OpName::kEpCombine, bwd, layer, true, in.a);
      const double routed = d(routed_tokens_);
      const std::uint32_t experts = compute(
          OpName::kExperts, bwd, layer, ComputeKind::kGroupedGemm,
          2.0 * routed * f.routed_experts / d(m_.moe.top_k),
          2.0 * gemm_bytes(routed, h, d(m_.moe.expert_ffn), d(m_.moe.experts / p_.ep) * h * ffn),
          {combine_b, start.a, start.b, gather.a, gather.b});
      gradient(experts, lp.experts, true);
      const std::uint32_t dispatch_b = expert_a2a(OpName::kEpDispatch, bwd, layer, false, experts);
      std::uint32_t shared = kNone;
      if (m_.moe.shared_experts > 0) {
        shared = compute(
            OpName::kSharedExperts, bwd, layer, ComputeKind::kGemm, 2.0 * Tm * f.shared_experts,
            2.0 * d(m_.moe.shared_experts) * gemm_bytes(Tm, h, d(m_.moe.expert_ffn), h * ffn),
            {in.a, start.a});
        gradient(shared, lp.shared, false);
      }
      const std::uint32_t router =
          compute(OpName::kRouter, bwd, layer, ComputeKind::kGemm, 2.0 * Tm * f.router,
                  2.0 * gemm_bytes(Tm, h, d(m_.moe.experts), h * d(m_.moe.experts)), {dispatch_b});
      gradient(router, lp.router, false);
      mlp_in = compute(OpName::kNorm, bwd, layer, ComputeKind::kElementwise, 10.0 * Tm * h,
                       2.0 * norm_bytes(), {router, shared});
    } else {
      // tp_comm_overlap: each SP collective runs beside its GEMM (see layer_forward).
      const std::uint32_t g = sp_gather(bwd, layer, in.a);
      const std::uint32_t down =
          compute(OpName::kMlpDown, bwd, layer, ComputeKind::kGemm, 2.0 * T * f.mlp_down / tp_,
                  2.0 * gemm_bytes(T, d(m_.ffn) / tp_, h, f.mlp_down / 2.0 / tp_),
                  {tp_overlap_ ? in.a : g, start.a, start.b, gather.a, gather.b});
      gradient(down, lp.mlp_down, false);
      const std::uint32_t up =
          compute(OpName::kMlpUp, bwd, layer, ComputeKind::kGemm, 2.0 * T * f.mlp_up / tp_,
                  2.0 * gemm_bytes(T, h, f.mlp_up / 2.0 / h / tp_, f.mlp_up / 2.0 / tp_),
                  {down, tp_overlap_ ? g : kNone});
      gradient(up, lp.mlp_up, false);
      const std::uint32_t r = tp_reduce(bwd, layer, tp_overlap_ ? down : up);
      mlp_in = compute(OpName::kNorm, bwd, layer, ComputeKind::kElementwise,
                       10.0 * d(tokens_sp_) * h, 2.0 * norm_bytes(), {r, tp_overlap_ ? up : kNone});
    }
    gradient(mlp_in, lp.norm, false);
    const std::uint32_t g = sp_gather(bwd, layer, mlp_in);
    const std::uint32_t out = compute(
        OpName::kAttentionOut, bwd, layer, ComputeKind::kGemm, 2.0 * T * f.attention_out / tp_,
        2.0 * gemm_bytes(T, d(m_.attn_out_width()) / tp_, h, f.attention_out / 2.0 / tp_),
        {tp_overlap_ ? mlp_in : g});
    gradient(out, lp.attn_out, false);
    std::uint32_t core_in = out;
    const std::uint32_t gathered = tp_overlap_ ? g : kNone;
    if (t_.recompute == Recompute::kSelective) {
      // Selective recomputation (Korthikanti et al.): only the attention core runs again.
      core_in = attention_core(Phase::kRecompute, layer, out, gathered);
    }
    const std::uint32_t core = attention_core(bwd, layer, core_in, gathered);
    const std::uint32_t qkv = compute(
        OpName::kQkv, bwd, layer, ComputeKind::kGemm, 2.0 * T * f.qkv / tp_,
        2.0 * gemm_bytes(T, h, d(m_.q_width() + 2 * m_.kv_width()) / tp_, f.qkv / 2.0 / tp_),
        {core});
    gradient(qkv, lp.qkv, false);
    const std::uint32_t r = tp_reduce(bwd, layer, tp_overlap_ ? core : qkv);
    const std::uint32_t n1 =
        compute(OpName::kNorm, bwd, layer, ComputeKind::kElementwise, 10.0 * d(tokens_sp_) * h,
                2.0 * norm_bytes(), {r, tp_overlap_ ? qkv : kNone});
    gradient(n1, lp.norm, false);
    return {n1, kNone};
  }

  // ---- embedding and output layer ----

  Frontier embedding_forward() {
    Frontier gather;
    zero3_gather(Phase::kForward, kNoLayer, embedding_params(), 0, kNone, gather);
    const std::uint32_t e = compute(OpName::kEmbedding, Phase::kForward, kNoLayer,
                                    ComputeKind::kElementwise, 0, 2.0 * d(act_bytes_), {gather.a});
    // Vocabulary-parallel embedding: each rank looks up its rows; the sum goes through an
    // AllReduce (ReduceScatter with SP).
    return {tp_reduce(Phase::kForward, kNoLayer, e), kNone};
  }

  void embedding_backward(Frontier in) {
    Frontier gather;
    zero3_gather(Phase::kBackward, kNoLayer, embedding_params(), 0, in.a, gather);
    const std::uint32_t g = sp_gather(Phase::kBackward, kNoLayer, in.a);
    const std::uint32_t e =
        compute(OpName::kEmbedding, Phase::kBackward, kNoLayer, ComputeKind::kElementwise, 0,
                4.0 * d(act_bytes_), {g, in.b, gather.a});
    gradient(e, embedding_params(), false);
  }

  Frontier head_forward(Frontier in) {
    Frontier gather;
    zero3_gather(Phase::kForward, kNoLayer, head_params() + count_parameters(m_).final_norm, 0,
                 kNone, gather);
    const double T = d(tokens_);
    const double h = d(m_.hidden);
    const std::uint32_t n =
        compute(OpName::kNorm, Phase::kForward, kNoLayer, ComputeKind::kElementwise,
                5.0 * d(tokens_sp_) * h, norm_bytes(), {in.a, in.b});
    const std::uint32_t x = sp_gather(Phase::kForward, kNoLayer, n);
    const double out_flops = T * output_flops_per_token(m_) / tp_;
    const std::uint32_t logits =
        compute(OpName::kLogits, Phase::kForward, kNoLayer, ComputeKind::kGemm, out_flops,
                gemm_bytes(T, h, vocab_local(), vocab_local() * h), {x, gather.a});
    const std::uint32_t loss =
        compute(OpName::kLoss, Phase::kForward, kNoLayer, ComputeKind::kElementwise,
                5.0 * T * vocab_local(), 2.0 * T * vocab_local() * 4.0, {logits});
    return {loss, kNone};
  }

  Frontier head_backward(Frontier in) {
    Frontier gather;
    zero3_gather(Phase::kBackward, kNoLayer, head_params() + count_parameters(m_).final_norm, 0,
                 in.a, gather);
    const double T = d(tokens_);
    const double h = d(m_.hidden);
    const std::uint32_t loss =
        compute(OpName::kLoss, Phase::kBackward, kNoLayer, ComputeKind::kElementwise,
                5.0 * T * vocab_local(), 2.0 * T * vocab_local() * 4.0, {in.a});
    const std::uint32_t logits =
        compute(OpName::kLogits, Phase::kBackward, kNoLayer, ComputeKind::kGemm,
                2.0 * T * output_flops_per_token(m_) / tp_,
                2.0 * gemm_bytes(T, h, vocab_local(), vocab_local() * h), {loss, gather.a});
    gradient(logits, head_params(), false);
    // Backward of the column-parallel output layer's input: AllReduce (ReduceScatter with SP).
    const std::uint32_t r = tp_reduce(Phase::kBackward, kNoLayer, logits);
    const std::uint32_t n =
        compute(OpName::kNorm, Phase::kBackward, kNoLayer, ComputeKind::kElementwise,
                10.0 * d(tokens_sp_) * h, 2.0 * norm_bytes(), {r});
    gradient(n, count_parameters(m_).final_norm, false);
    return {n, kNone};
  }

  // ---- passes ----

  std::uint32_t p2p_tag(std::int32_t micro_batch, int boundary, bool backward) const {
    return static_cast<std::uint32_t>(
        ((static_cast<std::int64_t>(micro_batch) * (virtual_stages_ - 1) + boundary) * 2) +
        (backward ? 1 : 0));
  }
  std::int64_t pp_bytes() const { return tokens_sp_ * m_.hidden * eb_; }

  void set_pass(std::int32_t micro_batch, int chunk) {
    mb_ = micro_batch;
    chunk_ = chunk;
    vs_ = chunk * p_.pp + stage_;
    layer_begin_ = first_layer_[static_cast<std::size_t>(vs_)];
    layer_end_ = first_layer_[static_cast<std::size_t>(vs_) + 1];
    prefetched_key_ = -1;
  }

  void forward_pass(std::int32_t micro_batch, int chunk) {
    set_pass(micro_batch, chunk);
    Frontier cur;
    if (vs_ > 0) {
      cur.a = p2p(false, OpName::kPpActivation, Phase::kForward, GroupKind::kPipeline, -1,
                  pp_bytes(), p2p_tag(mb_, vs_ - 1, false), {});
    } else {
      cur = embedding_forward();
    }
    if (start_gate_ != kNone) {
      cur.b = start_gate_;
      start_gate_ = kNone;
    }
    for (std::int64_t l = layer_begin_; l < layer_end_; ++l) {
      cur = layer_forward(l, Phase::kForward, cur);
    }
    if (vs_ == virtual_stages_ - 1) {
      head_forward(cur);
    } else {
      p2p(true, OpName::kPpActivation, Phase::kForward, GroupKind::kPipeline, +1, pp_bytes(),
          p2p_tag(mb_, vs_, false), {cur.a, cur.b});
    }
  }

  void backward_pass(std::int32_t micro_batch, int chunk, bool last_of_chunk) {
    set_pass(micro_batch, chunk);
    grad_sync_ = last_of_chunk;
    Frontier cur;
    if (vs_ < virtual_stages_ - 1) {
      cur.a = p2p(false, OpName::kPpGradient, Phase::kBackward, GroupKind::kPipeline, +1,
                  pp_bytes(), p2p_tag(mb_, vs_, true), {});
    } else {
      cur = head_backward(cur);
    }
    for (std::int64_t l = layer_end_ - 1; l >= layer_begin_; --l)
      cur = layer_backward(l, cur);
    if (vs_ == 0) {
      embedding_backward(cur);
    } else {
      p2p(true, OpName::kPpGradient, Phase::kBackward, GroupKind::kPipeline, -1, pp_bytes(),
          p2p_tag(mb_, vs_ - 1, true), {cur.a, cur.b});
    }
    last_backward_op_ = static_cast<std::uint32_t>(program_.ops.size() - 1);
    if (last_of_chunk) {
      close_bucket(false);
      close_bucket(true);
    }
    grad_sync_ = false;
  }

  void optimizer() {
    mb_ = kNoMicroBatch;
    chunk_ = 0;
    if (!t_.overlap_grad_reduce) {
      for (const auto& b : closed_)
        emit_bucket(b, last_backward_op_);
    }
    // Parameters this rank updates: its share of the stage's parameters (ZeRO >= 1 shards the
    // optimizer over the data-parallel group).
    const RankParameters held = rank_parameters(spec_, stage_);
    double dense = held.dense;
    double expert = held.expert;
    if (p_.zero >= 1) {
      dense /= dense_group_size_;
      expert /= expert_group_size_;
    }
    const double params = dense + expert;
    // Mixed-precision Adam: read gradient, FP32 master weight and two moments; write the three
    // and the 16-bit weight.
    const double bytes = params * (d(eb_) + 12.0 + 12.0 + d(eb_));
    std::vector<std::uint32_t> deps = bucket_ops_;
    if (deps.empty()) deps.push_back(last_backward_op_);
    Op op;
    op.kind = OpKind::kCompute;
    op.stream = Stream::kCompute;
    op.name = OpName::kOptimizerStep;
    op.phase = Phase::kOptimizer;
    op.compute = ComputeKind::kOptimizer;
    op.flops = 10.0 * params;
    op.bytes = std::llround(bytes);
    op.duration = spec_.compute.duration(op.name, op.phase, op.compute, op.flops, bytes);
    op.dep_begin = static_cast<std::uint32_t>(program_.deps.size());
    program_.deps.insert(program_.deps.end(), deps.begin(), deps.end());
    op.dep_count = static_cast<std::uint16_t>(std::min<std::size_t>(deps.size(), 0xFFFF));
    op.micro_batch = kNoMicroBatch;
    program_.ops.push_back(op);
    const auto step = static_cast<std::uint32_t>(program_.ops.size() - 1);
    if ((p_.zero == 1 || p_.zero == 2) && !t_.overlap_param_gather) {
      // The distributed optimizer gathers the updated parameters bucket by bucket.
      for (const auto& b : closed_) {
        collective(OpName::kZeroParamGather, Phase::kOptimizer, kNoLayer,
                   CollectiveKind::kAllGather, b.group, ParallelDim::kDp, b.bytes, {step});
      }
    }
  }

  const WorkloadSpec& spec_;
  const ModelSpec& m_;
  const ParallelLayout& p_;
  const TrainingConfig& t_;
  int stage_;
  Program program_;

  std::int64_t eb_ = 2;
  int tp_ = 1;
  bool sp_ = false;
  std::int64_t s_local_ = 0;
  std::int64_t tokens_ = 0;
  std::int64_t tokens_sp_ = 0;
  std::int64_t act_bytes_ = 0;
  std::int64_t routed_tokens_ = 0;
  std::int64_t a2a_bytes_ = 0;
  bool skewed_ = false;
  bool tp_overlap_ = false;
  std::vector<std::pair<std::int64_t, GroupKind>> start_gathers_;
  std::uint32_t start_gate_ = kNone;
  int virtual_stages_ = 1;
  std::vector<std::int64_t> stage_layers_;
  std::vector<std::int64_t> first_layer_;
  int dense_group_size_ = 1;
  int expert_group_size_ = 1;

  std::int32_t mb_ = kNoMicroBatch;
  int chunk_ = 0;
  int vs_ = 0;
  std::int64_t layer_begin_ = 0;
  std::int64_t layer_end_ = 0;
  std::array<std::uint32_t, static_cast<std::size_t>(GroupKind::kCount)> group_seq_{};
  std::uint32_t cp_tag_ = 0;
  Frontier prefetched_;
  std::int64_t prefetched_key_ = -1;

  bool grad_sync_ = false;
  Bucket dense_bucket_;
  Bucket expert_bucket_;
  std::vector<ClosedBucket> closed_;
  std::vector<std::uint32_t> bucket_ops_;
  std::uint32_t last_backward_op_ = kNone;
};

}  // namespace

Program generate_stage_program(const WorkloadSpec& spec, int stage) {
  if (stage < 0 || stage >= spec.parallel.pp) throw std::logic_error("stage out of range");
  const auto& p = spec.parallel;
  if ((p.zero == 1 || p.zero == 2) && spec.training.overlap_param_gather && p.dp * p.cp > 1) {
    Generator first(spec, stage);
    first.run();
    Generator second(spec, stage);
    second.gather_at_start(first.closed_buckets());
    return second.run();
  }
  return Generator(spec, stage).run();
}

std::vector<std::vector<std::int64_t>> expert_traffic_matrices(const WorkloadSpec& spec) {
  const auto& p = spec.parallel;
  const auto& m = spec.model;
  if (!m.moe_enabled || p.ep == 1 || spec.training.routing_skew <= 0 || m.moe.capacity_factor > 0) {
    return {};
  }
  const std::int64_t tokens =
      spec.training.micro_batch * spec.training.seq_len / p.cp / (p.sequence_parallel() ? p.tp : 1);
  const std::int64_t send =
      tokens * m.moe.top_k * m.hidden * element_bytes(spec.training.precision);
  const auto shares = expert_rank_shares(m.moe.experts, p.ep, spec.training.routing_skew);
  return {expert_traffic_matrix(send, shares, false), expert_traffic_matrix(send, shares, true)};
}

}  // namespace stepsim::workloads
