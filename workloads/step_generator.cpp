#include "workloads/step_generator.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

#include "workloads/expert_routing.hpp"
#include "workloads/gradient_buckets.hpp"
#include "workloads/layer_costs.hpp"
#include "workloads/layer_parameters.hpp"
#include "workloads/memory_model.hpp"
#include "workloads/op_graph_builder.hpp"
#include "workloads/pipeline_walk.hpp"
#include "workloads/rank_map.hpp"
#include "workloads/zero3_parameter_gathers.hpp"

namespace stepsim::workloads {

namespace {

// Whether routed tokens spread unequally: a Zipf skew or a per-expert load table.
bool skewed_load(const WorkloadSpec& spec) {
  return spec.training.routing_skew > 0 || !spec.model.moe.expert_load.empty();
}

// Up to two operations whose completion the next operation needs: `main`, on the path of the
// activation (or its gradient), and `side`, one that ran beside it (the shared experts, a GEMM
// overlapped with its communication, the step's first parameter gather).
struct Frontier {
  OpIndex main = kNoOp;
  OpIndex side = kNoOp;
};

// Emits the operations of one pipeline stage's step, pass by pass (pipeline_walk), layer by
// layer, with costs from layer_costs, gradients into GradientBuckets and ZeRO-3 gathers from
// Zero3ParameterGathers; ends with the optimizer step.
class StageProgramGenerator {
 public:
  StageProgramGenerator(const WorkloadSpec& spec, int stage)
      : StageProgramGenerator(spec, stage, micro_batch_shape(spec)) {}

  StageProgramGenerator(const WorkloadSpec& spec, int stage, const MicroBatchShape& shape)
      : spec_(spec),
        model_(spec.model),
        layout_(spec.parallel),
        training_(spec.training),
        stage_(stage),
        shape_(shape),
        head_shape_(shape),
        counts_(count_parameters(spec.model)),
        buckets_(spec, graph_),
        zero3_(spec, graph_) {
    sequence_parallel_ = layout_.sequence_parallel();
    tp_comm_overlap_ = sequence_parallel_ && layout_.tp_comm_overlap;
    virtual_stages_ = layout_.pp * layout_.vpp;
    activation_bytes_ = shape_.tokens * model_.hidden * shape_.element_bytes;
    pipeline_bytes_ = shape_.sharded_tokens * model_.hidden * shape_.element_bytes;
    expert_all_to_all_bytes_ = shape_.routed_tokens * model_.hidden * shape_.element_bytes;
    // Skewed routing and the relayed dispatch give AllToAllv matrices (expert_traffic_matrices).
    skewed_routing_ = layout_.ep > 1 && ((skewed_load(spec) && model_.moe.capacity_factor <= 0) ||
                                         model_.moe.dispatch == ExpertDispatch::kRelayed);
    layers_.resize(static_cast<std::size_t>(model_.layers));
  }

  // ZeRO-1/2 with overlap_param_gather: the buckets of the previous step's optimizer (from a
  // first generation of the same program) are gathered at the start of this step.
  void gather_at_start(std::vector<ClosedBucket> buckets) { start_gathers_ = std::move(buckets); }
  const std::vector<ClosedBucket>& closed_buckets() const { return buckets_.closed(); }

  Program run() {
    start_gate_ = gather_parameters_at_step_start(start_gathers_, graph_);
    const std::vector<StagePass> passes = pipeline_walk(spec_, stage_);
    for (std::size_t i = 0; i < passes.size(); ++i) {
      const StagePass& pass = passes[i];
      std::optional<HeldSend> held = std::exchange(held_send_, std::nullopt);
      if (!held && i + 1 < passes.size() && interleaves(pass, passes[i + 1])) {
        forward_backward_pair(pass, passes[i + 1]);
        ++i;
        continue;
      }
      if (pass.weights_only) {
        weight_pass(pass);
      } else if (pass.forward) {
        forward_pass(pass);
      } else {
        backward_pass(pass);
      }
      // DualPipe: the held forward output leaves once this pass has computed too.
      if (held) send_held(*held, pass_end_);
    }
    if (held_send_) throw std::logic_error("step generator bug: a send held past the last pass");
    if (!deferred_weights_.empty())
      throw std::logic_error("step generator bug: weight gradients never computed");
    optimizer_step();
    return graph_.take_program();
  }

  // An inference server's forward pass (generate_forward_program): one pass over every layer of
  // the single stage, with the KV cache reads added to each attention core, and no loss.
  Program run_forward(const ForwardPass& forward) {
    serving_ = true;
    kv_cache_bytes_per_layer_ = forward.kv_cache_bytes_per_layer;
    attention_core_flops_per_layer_ = forward.attention_core_flops_per_layer;
    if (forward.logit_tokens > 0) {
      head_shape_.tokens = forward.logit_tokens;
      head_shape_.sharded_tokens = forward.logit_tokens;
    }
    StagePass pass;
    pass.layer_begin = 0;
    pass.layer_end = model_.layers;
    forward_pass(pass);
    return graph_.take_program();
  }

 private:
  // ---- building blocks ----

  // The costs and parameters of a layer, computed once per layer: every pass asks again.
  struct LayerFigures {
    LayerCosts costs;
    LayerParameters parameters;
  };
  const LayerFigures& layer_figures(std::int64_t layer) {
    std::optional<LayerFigures>& figures = layers_[static_cast<std::size_t>(layer)];
    if (!figures) {
      figures =
          LayerFigures{layer_forward_costs(model_, shape_, layer),
                       layer_parameters_per_rank(model_, counts_, layout_.tp, layout_.ep, layer)};
      figures->costs.attention_core.bytes += kv_cache_bytes_per_layer_;
      if (attention_core_flops_per_layer_ >= 0)
        figures->costs.attention_core.flops = attention_core_flops_per_layer_;
    }
    return *figures;
  }

  OpIndex compute(const OpLabel& label, ComputeKind kind, const OpCost& cost,
                  std::initializer_list<OpIndex> deps) {
    // A serving step keeps the roofline (its attention reads the KV cache; serving_spec.hpp).
    Time duration =
        serving_ ? spec_.compute.duration(label.name, label.phase, kind, cost.flops, cost.bytes)
                 : spec_.compute.duration(label.name, label.phase, kind, cost);
    if (beside_all_to_all_ && (kind == ComputeKind::kGemm || kind == ComputeKind::kGroupedGemm ||
                               kind == ComputeKind::kAttention)) {
      duration = Time::ps(std::llround(static_cast<double>(duration.picoseconds()) /
                                       (1.0 - layout_.dualpipe_comm_sm_share)));
    }
    return graph_.add_compute(label, kind, cost.flops, cost.bytes, duration, deps);
  }

  // The backward of an operation with weights (forward cost `forward`), whose weight gradients
  // (`parameters`, routed experts or dense) go to the buckets: one operation computing both
  // halves (twice the forward), or, in a backward that defers its weights (DualPipe's zero-bubble
  // passes), the input-gradient half now and the weight-gradient half, the forward's cost again,
  // in the weight pass that completes it.
  OpIndex backward_gemm(const OpLabel& label, ComputeKind kind, const OpCost& forward,
                        std::initializer_list<OpIndex> deps, double parameters, bool expert) {
    if (!deferring_) {
      const OpIndex op = compute(label, kind, backward_cost(forward), deps);
      buckets_.add_gradients(op, parameters, expert);
      return op;
    }
    const OpIndex op =
        compute(label, kind, backward_part(forward, kernels::KernelPass::kBackwardInput), deps);
    pending_weights_.push_back({label, kind,
                                backward_part(forward, kernels::KernelPass::kBackwardWeight), op,
                                parameters, expert, true});
    return op;
  }

  // Gradients computed by `producer` itself (norms, the embedding); a deferring backward hands
  // them to the buckets in its weight pass.
  void add_gradients(OpIndex producer, double parameters, bool expert) {
    if (!deferring_) {
      buckets_.add_gradients(producer, parameters, expert);
      return;
    }
    pending_weights_.push_back(
        {{}, ComputeKind::kElementwise, {}, producer, parameters, expert, false});
  }

  // Tensor-parallel communication of a b x s' x h activation after a row-parallel layer (or in
  // the backward of a column-parallel one): AllReduce, or ReduceScatter with SP. Identity at tp 1.
  OpIndex tp_reduce(Phase phase, std::int64_t layer, OpIndex after) {
    if (layout_.tp == 1) return after;
    if (sequence_parallel_) {
      return graph_.add_collective({OpName::kSpReduceScatter, phase, layer},
                                   CollectiveKind::kReduceScatter, Communicator::kTensor,
                                   ParallelDim::kSp, activation_bytes_, {after});
    }
    return graph_.add_collective({OpName::kTpAllReduce, phase, layer}, CollectiveKind::kAllReduce,
                                 Communicator::kTensor, ParallelDim::kTp, activation_bytes_,
                                 {after});
  }

  // The AllGather SP needs before a column-parallel layer (or in the backward of a row-parallel
  // one); the identity without SP.
  OpIndex sp_gather(Phase phase, std::int64_t layer, OpIndex after) {
    if (!sequence_parallel_) return after;
    return graph_.add_collective({OpName::kSpAllGather, phase, layer}, CollectiveKind::kAllGather,
                                 Communicator::kTensor, ParallelDim::kSp, activation_bytes_,
                                 {after});
  }

  // Expert dispatch or combine; under skewed routing an AllToAllv with the dispatch pattern's
  // matrix (0) or its transpose (1). Identity at ep 1.
  OpIndex expert_all_to_all(OpName name, Phase phase, std::int64_t layer, bool dispatch_pattern,
                            OpIndex after) {
    if (layout_.ep == 1) return after;
    return graph_.add_collective(
        {name, phase, layer},
        skewed_routing_ ? CollectiveKind::kAllToAllv : CollectiveKind::kAllToAll,
        Communicator::kExpert, ParallelDim::kEp, expert_all_to_all_bytes_, {after},
        skewed_routing_ ? (dispatch_pattern ? 0u : 1u) : kNoMatrix);
  }

  // ---- attention core with context parallelism ----

  // `also`: a second operation the core waits for (the SP AllGather under tp_comm_overlap).
  OpIndex attention_core(Phase phase, std::int64_t layer, const OpCost& cost, OpIndex after,
                         OpIndex also) {
    if (layout_.cp == 1) {
      return compute({OpName::kAttentionCore, phase, layer}, ComputeKind::kAttention, cost,
                     {after, also});
    }
    if (layout_.cp_mode == CpMode::kUlysses)
      return ulysses_attention(phase, layer, cost, after, also);
    return ring_attention(phase, layer, cost, after, also);
  }

  // Heads are scattered and the sequence gathered before attention, and back after
  // (DeepSpeed-Ulysses); backward sends the gradients the same way.
  OpIndex ulysses_attention(Phase phase, std::int64_t layer, const OpCost& cost, OpIndex after,
                            OpIndex also) {
    const bool backward = phase == Phase::kBackward;
    const std::int64_t qkv_bytes =
        shape_.tokens * (model_.q_width() + model_.kv_width() + model_.attn_out_width()) /
        layout_.tp * shape_.element_bytes;
    const std::int64_t out_bytes =
        shape_.tokens * model_.attn_out_width() / layout_.tp * shape_.element_bytes;
    const OpLabel exchange{OpName::kCpAllToAll, phase, layer};
    const OpIndex in =
        graph_.add_collective(exchange, CollectiveKind::kAllToAll, Communicator::kContext,
                              ParallelDim::kCp, backward ? out_bytes : qkv_bytes, {after, also});
    const OpIndex core =
        compute({OpName::kAttentionCore, phase, layer}, ComputeKind::kAttention, cost, {in});
    return graph_.add_collective(exchange, CollectiveKind::kAllToAll, Communicator::kContext,
                                 ParallelDim::kCp, backward ? qkv_bytes : out_bytes, {core});
  }

  // Ring attention (Megatron-LM/Transformer Engine): cp steps, each on one block of keys and
  // values; the block for step j+1 arrives from the previous rank while step j computes.
  // Backward circulates the key/value blocks and their gradients (twice the bytes).
  OpIndex ring_attention(Phase phase, std::int64_t layer, const OpCost& cost, OpIndex after,
                         OpIndex also) {
    const bool backward = phase == Phase::kBackward;
    const std::int64_t kv_bytes = shape_.tokens * (model_.kv_width() + model_.attn_out_width()) /
                                  layout_.tp * shape_.element_bytes * (backward ? 2 : 1);
    // The kernels of `cost` are one block's (layer_costs.hpp); its FLOPs and bytes the whole's.
    OpCost block_cost = cost;
    block_cost.flops /= layout_.cp;
    block_cost.bytes /= layout_.cp;
    const OpLabel core{OpName::kAttentionCore, phase, layer};
    // The exchanges carry no layer label (they are matched by tag).
    const OpLabel exchange{OpName::kCpKvExchange, phase, kNoLayer};
    OpIndex block = compute(core, ComputeKind::kAttention, block_cost, {after, also});
    OpIndex received = kNoOp;
    for (int j = 0; j + 1 < layout_.cp; ++j) {
      const std::int64_t tag = next_kv_tag_++;
      const OpIndex ready = j == 0 ? after : received;
      graph_.add_send(exchange, Communicator::kContext, +1, kv_bytes, tag, {ready});
      received = graph_.add_receive(exchange, Communicator::kContext, -1, kv_bytes, tag, {ready});
      block = compute(core, ComputeKind::kAttention, block_cost, {received, block});
    }
    return block;
  }

  // ---- one layer ----

  // Forward (or recomputed forward) of `layer`; returns what the next operation waits for.
  Frontier layer_forward(std::int64_t layer, Phase phase, Frontier in) {
    return layer_forward_mlp(layer_forward_attention(layer, phase, in));
  }

  // A layer's forward in the two pieces DualPipe's overlap interleaves (figure 4 of the report):
  // the attention block up to the MLP's norm (with the router and the expert dispatch of an MoE
  // layer), then the MLP (the shared and routed experts and the combine).
  struct ForwardLayerState {
    std::int64_t layer = 0;
    Phase phase = Phase::kForward;
    OpIndex mlp_norm = kNoOp;
    OpIndex dispatch = kNoOp;
  };

  ForwardLayerState layer_forward_attention(std::int64_t layer, Phase phase, Frontier in) {
    const LayerCosts& cost = layer_figures(layer).costs;
    ParameterGathers gathers;
    if (phase == Phase::kForward) gathers = zero3_.for_layer(Phase::kForward, layer, in.main);
    const OpIndex attention_norm =
        compute({OpName::kNorm, phase, layer}, ComputeKind::kElementwise, cost.norm,
                {in.main, in.side, gathers.dense, gathers.routed_experts});
    if (phase == Phase::kForward && layer + 1 < pass_layer_end_)
      zero3_.prefetch(Phase::kForward, layer + 1, attention_norm);
    // With tp_comm_overlap a GEMM and its SP collective start together (both after the GEMM's
    // input), and what follows waits for both: the pair takes max(GEMM, communication).
    const OpIndex gathered = sp_gather(phase, layer, attention_norm);
    const OpIndex qkv = compute({OpName::kQkv, phase, layer}, ComputeKind::kGemm, cost.qkv,
                                {tp_comm_overlap_ ? attention_norm : gathered});
    const OpIndex core =
        attention_core(phase, layer, cost.attention_core, qkv, tp_comm_overlap_ ? gathered : kNoOp);
    const OpIndex out = compute({OpName::kAttentionOut, phase, layer}, ComputeKind::kGemm,
                                cost.attention_out, {core});
    const OpIndex reduced = tp_reduce(phase, layer, tp_comm_overlap_ ? core : out);
    ForwardLayerState state{layer, phase, kNoOp, kNoOp};
    state.mlp_norm = compute({OpName::kNorm, phase, layer}, ComputeKind::kElementwise, cost.norm,
                             {reduced, tp_comm_overlap_ ? out : kNoOp});
    if (model_.is_moe_layer(layer)) {
      const OpIndex router = compute({OpName::kRouter, phase, layer}, ComputeKind::kGemm,
                                     cost.router, {state.mlp_norm});
      state.dispatch = expert_all_to_all(OpName::kEpDispatch, phase, layer, true, router);
    }
    return state;
  }

  Frontier layer_forward_mlp(const ForwardLayerState& state) {
    const std::int64_t layer = state.layer;
    const Phase phase = state.phase;
    const LayerCosts& cost = layer_figures(layer).costs;
    const OpIndex mlp_norm = state.mlp_norm;
    if (model_.is_moe_layer(layer)) {
      // The shared experts run on the compute stream while the dispatch is in flight.
      OpIndex shared = kNoOp;
      if (model_.moe.shared_experts > 0) {
        shared = compute({OpName::kSharedExperts, phase, layer}, ComputeKind::kGemm,
                         cost.shared_experts, {mlp_norm});
      }
      // Each rank computes, on average, its own tokens' share of routed work (top-k experts).
      const OpIndex experts = compute({OpName::kExperts, phase, layer}, ComputeKind::kGroupedGemm,
                                      cost.routed_experts, {state.dispatch});
      const OpIndex combine = expert_all_to_all(OpName::kEpCombine, phase, layer, false, experts);
      return {combine, shared};
    }
    const OpIndex mlp_in = sp_gather(phase, layer, mlp_norm);
    const OpIndex up = compute({OpName::kMlpUp, phase, layer}, ComputeKind::kGemm, cost.mlp_up,
                               {tp_comm_overlap_ ? mlp_norm : mlp_in});
    const OpIndex down = compute({OpName::kMlpDown, phase, layer}, ComputeKind::kGemm,
                                 cost.mlp_down, {up, tp_comm_overlap_ ? mlp_in : kNoOp});
    if (tp_comm_overlap_) return {tp_reduce(phase, layer, up), down};
    return {tp_reduce(phase, layer, down), kNoOp};
  }

  // What the backward of a layer's MLP starts from: the incoming gradient, the recomputed
  // forward (full recomputation) and the layer's ZeRO-3 gathers.
  struct MlpBackwardInputs {
    Frontier in;
    Frontier recomputed;
    ParameterGathers gathers;
  };

  Frontier layer_backward(std::int64_t layer, Frontier in) {
    BackwardLayerState state = layer_backward_begin(layer, in);
    layer_backward_mlp(state);
    return layer_backward_attention(state);
  }

  // A layer's backward in the three pieces DualPipe's overlap interleaves: its start (the
  // recomputed forward, and the backward of the combine of an MoE layer), the MLP (the routed
  // experts, the backward of the dispatch and the shared experts; a dense MLP whole), and the
  // attention block (with the router of an MoE layer).
  struct BackwardLayerState {
    std::int64_t layer = 0;
    MlpBackwardInputs mlp;
    OpIndex combine = kNoOp;
    OpIndex dispatch = kNoOp;
    OpIndex shared = kNoOp;
    OpIndex mlp_norm = kNoOp;
  };

  BackwardLayerState layer_backward_begin(std::int64_t layer, Frontier in) {
    const Phase bwd = Phase::kBackward;
    const ParameterGathers gathers = zero3_.for_layer(bwd, layer, in.main);
    if (layer > pass_layer_begin_) zero3_.prefetch(bwd, layer - 1, in.main);
    Frontier start = in;
    if (training_.recompute == Recompute::kFull) {
      // Megatron's full (uniform, 1 layer) recomputation: the layer's forward runs again,
      // communication included, right before its backward.
      start = layer_forward(layer, Phase::kRecompute, {in.main, gathers.dense});
    } else if (training_.recompute == Recompute::kNormAndMlaUp) {
      // DeepSeek-V3 (section 3.3): the two RMSNorms and the MLA up-projections run again before
      // the layer's backward, which needs their outputs; they are not stored.
      const LayerCosts& cost = layer_figures(layer).costs;
      const Phase re = Phase::kRecompute;
      OpIndex last = compute({OpName::kNorm, re, layer}, ComputeKind::kElementwise, cost.norm,
                             {in.main, gathers.dense});
      const OpCost up = mla_up_projection_cost(model_, shape_);
      if (up.flops > 0) last = compute({OpName::kQkv, re, layer}, ComputeKind::kGemm, up, {last});
      last = compute({OpName::kNorm, re, layer}, ComputeKind::kElementwise, cost.norm, {last});
      start = {last, kNoOp};
    }
    BackwardLayerState state;
    state.layer = layer;
    state.mlp = MlpBackwardInputs{in, start, gathers};
    if (model_.is_moe_layer(layer))
      state.combine = expert_all_to_all(OpName::kEpCombine, bwd, layer, true, in.main);
    return state;
  }

  void layer_backward_mlp(BackwardLayerState& state) {
    const std::int64_t layer = state.layer;
    const LayerCosts& cost = layer_figures(layer).costs;
    const LayerParameters& params = layer_figures(layer).parameters;
    if (!model_.is_moe_layer(layer)) {
      state.mlp_norm = dense_mlp_backward(layer, cost, params, state.mlp);
      return;
    }
    const Phase bwd = Phase::kBackward;
    const MlpBackwardInputs& mlp = state.mlp;
    const OpIndex experts = backward_gemm({OpName::kExperts, bwd, layer}, ComputeKind::kGroupedGemm,
                                          cost.routed_experts,
                                          {state.combine, mlp.recomputed.main, mlp.recomputed.side,
                                           mlp.gathers.dense, mlp.gathers.routed_experts},
                                          params.routed_experts, true);
    state.dispatch = expert_all_to_all(OpName::kEpDispatch, bwd, layer, false, experts);
    if (model_.moe.shared_experts > 0) {
      state.shared = backward_gemm({OpName::kSharedExperts, bwd, layer}, ComputeKind::kGemm,
                                   cost.shared_experts, {mlp.in.main, mlp.recomputed.main},
                                   params.shared_experts, false);
    }
  }

  Frontier layer_backward_attention(BackwardLayerState& state) {
    const std::int64_t layer = state.layer;
    const LayerCosts& cost = layer_figures(layer).costs;
    const LayerParameters& params = layer_figures(layer).parameters;
    if (model_.is_moe_layer(layer)) {
      const Phase bwd = Phase::kBackward;
      const OpIndex router = backward_gemm({OpName::kRouter, bwd, layer}, ComputeKind::kGemm,
                                           cost.router, {state.dispatch}, params.router, false);
      state.mlp_norm = compute({OpName::kNorm, bwd, layer}, ComputeKind::kElementwise,
                               backward_cost(cost.norm), {router, state.shared});
    }
    add_gradients(state.mlp_norm, params.norm, false);
    return attention_backward(layer, cost, params, state.mlp_norm);
  }

  // Returns the backward of the MLP's norm. tp_comm_overlap: each SP collective runs beside its
  // GEMM (see layer_forward).
  OpIndex dense_mlp_backward(std::int64_t layer, const LayerCosts& cost,
                             const LayerParameters& params, const MlpBackwardInputs& mlp) {
    const Phase bwd = Phase::kBackward;
    const OpIndex gathered = sp_gather(bwd, layer, mlp.in.main);
    const OpIndex down =
        backward_gemm({OpName::kMlpDown, bwd, layer}, ComputeKind::kGemm, cost.mlp_down,
                      {tp_comm_overlap_ ? mlp.in.main : gathered, mlp.recomputed.main,
                       mlp.recomputed.side, mlp.gathers.dense, mlp.gathers.routed_experts},
                      params.mlp_down, false);
    const OpIndex up =
        backward_gemm({OpName::kMlpUp, bwd, layer}, ComputeKind::kGemm, cost.mlp_up,
                      {down, tp_comm_overlap_ ? gathered : kNoOp}, params.mlp_up, false);
    const OpIndex reduced = tp_reduce(bwd, layer, tp_comm_overlap_ ? down : up);
    return compute({OpName::kNorm, bwd, layer}, ComputeKind::kElementwise, backward_cost(cost.norm),
                   {reduced, tp_comm_overlap_ ? up : kNoOp});
  }

  // The backward of the attention block, from the backward of the MLP's norm.
  Frontier attention_backward(std::int64_t layer, const LayerCosts& cost,
                              const LayerParameters& params, OpIndex mlp_norm) {
    const Phase bwd = Phase::kBackward;
    const OpIndex gathered = sp_gather(bwd, layer, mlp_norm);
    const OpIndex out =
        backward_gemm({OpName::kAttentionOut, bwd, layer}, ComputeKind::kGemm, cost.attention_out,
                      {tp_comm_overlap_ ? mlp_norm : gathered}, params.attention_out, false);
    OpIndex core_in = out;
    const OpIndex beside = tp_comm_overlap_ ? gathered : kNoOp;
    if (training_.recompute == Recompute::kSelective) {
      // Selective recomputation (Korthikanti et al.): only the attention core runs again.
      core_in = attention_core(Phase::kRecompute, layer, cost.attention_core, out, beside);
    }
    const OpIndex core =
        attention_core(bwd, layer, backward_cost(cost.attention_core), core_in, beside);
    const OpIndex qkv = backward_gemm({OpName::kQkv, bwd, layer}, ComputeKind::kGemm, cost.qkv,
                                      {core}, params.qkv, false);
    const OpIndex reduced = tp_reduce(bwd, layer, tp_comm_overlap_ ? core : qkv);
    const OpIndex norm =
        compute({OpName::kNorm, bwd, layer}, ComputeKind::kElementwise, backward_cost(cost.norm),
                {reduced, tp_comm_overlap_ ? qkv : kNoOp});
    add_gradients(norm, params.norm, false);
    return {norm, kNoOp};
  }

  // ---- embedding and output layer ----

  Frontier embedding_forward() {
    const ParameterGathers gathers = zero3_.gather(
        Phase::kForward, kNoLayer, embedding_parameters_per_rank(model_, layout_.tp), 0, kNoOp);
    const OpIndex lookup =
        compute({OpName::kEmbedding, Phase::kForward, kNoLayer}, ComputeKind::kElementwise,
                embedding_forward_cost(model_, shape_), {gathers.dense});
    // Vocabulary-parallel embedding: each rank looks up its rows; the sum goes through an
    // AllReduce (ReduceScatter with SP).
    return {tp_reduce(Phase::kForward, kNoLayer, lookup), kNoOp};
  }

  void embedding_backward(Frontier in) {
    const double params = embedding_parameters_per_rank(model_, layout_.tp);
    const ParameterGathers gathers = zero3_.gather(Phase::kBackward, kNoLayer, params, 0, in.main);
    const OpIndex gathered = sp_gather(Phase::kBackward, kNoLayer, in.main);
    const OpIndex lookup = compute(
        {OpName::kEmbedding, Phase::kBackward, kNoLayer}, ComputeKind::kElementwise,
        backward_cost(embedding_forward_cost(model_, shape_)), {gathered, in.side, gathers.dense});
    add_gradients(lookup, params, false);
  }

  double output_parameters() const {
    return output_parameters_per_rank(model_, layout_.tp, virtual_stages_);
  }

  void head_forward(Frontier in) {
    const Phase fwd = Phase::kForward;
    const ParameterGathers gathers =
        zero3_.gather(fwd, kNoLayer, output_parameters() + counts_.final_norm, 0, kNoOp);
    const HeadCosts cost = head_forward_costs(model_, head_shape_);
    const OpIndex norm = compute({OpName::kNorm, fwd, kNoLayer}, ComputeKind::kElementwise,
                                 cost.final_norm, {in.main, in.side});
    const OpIndex gathered = sp_gather(fwd, kNoLayer, norm);
    const OpIndex logits = compute({OpName::kLogits, fwd, kNoLayer}, ComputeKind::kGemm,
                                   cost.logits, {gathered, gathers.dense});
    if (!serving_)
      compute({OpName::kLoss, fwd, kNoLayer}, ComputeKind::kElementwise, cost.loss, {logits});
  }

  Frontier head_backward(Frontier in) {
    const Phase bwd = Phase::kBackward;
    const ParameterGathers gathers =
        zero3_.gather(bwd, kNoLayer, output_parameters() + counts_.final_norm, 0, in.main);
    const HeadCosts cost = head_forward_costs(model_, shape_);
    const OpIndex loss =
        compute({OpName::kLoss, bwd, kNoLayer}, ComputeKind::kElementwise, cost.loss, {in.main});
    const OpIndex logits =
        backward_gemm({OpName::kLogits, bwd, kNoLayer}, ComputeKind::kGemm, cost.logits,
                      {loss, gathers.dense}, output_parameters(), false);
    // Backward of the column-parallel output layer's input: AllReduce (ReduceScatter with SP).
    const OpIndex reduced = tp_reduce(bwd, kNoLayer, logits);
    const OpIndex norm = compute({OpName::kNorm, bwd, kNoLayer}, ComputeKind::kElementwise,
                                 backward_cost(cost.final_norm), {reduced});
    add_gradients(norm, counts_.final_norm, false);
    return {norm, kNoOp};
  }

  // ---- passes ----

  void begin_pass(const StagePass& pass) {
    graph_.set_pass(pass.micro_batch, pass.chunk);
    pass_layer_begin_ = pass.layer_begin;
    pass_layer_end_ = pass.layer_end;
    zero3_.begin_pass();
  }

  void forward_pass(const StagePass& pass) {
    begin_pass(pass);
    const OpLabel transfer{OpName::kPpActivation, Phase::kForward, kNoLayer};
    const bool reverse = pass.downstream < 0;
    Frontier cur;
    if (pass.receives()) {
      cur.main = graph_.add_receive(transfer, Communicator::kPipeline, -pass.downstream,
                                    pipeline_bytes_, pass.receive_tag(), {}, reverse);
    } else {
      cur = embedding_forward();
    }
    if (start_gate_ != kNoOp) {
      cur.side = start_gate_;
      start_gate_ = kNoOp;
    }
    for (std::int64_t layer = pass.layer_begin; layer < pass.layer_end; ++layer)
      cur = layer_forward(layer, Phase::kForward, cur);
    if (pass.sends()) {
      pass_end_ = graph_.last_op();
      if (pass.send_after_next) {
        held_send_ = HeldSend{pass, cur};
        return;
      }
      graph_.add_send(transfer, Communicator::kPipeline, pass.downstream, pipeline_bytes_,
                      pass.send_tag(), {cur.main, cur.side}, reverse);
    } else {
      head_forward(cur);
      pass_end_ = graph_.last_op();
    }
  }

  // Whether `forward` and `backward` form one of DualPipe's overlapped forward-and-backward
  // chunks that dualpipe_overlap interleaves. Under ZeRO-3 the pair stays sequential: its
  // parameter gathers follow one pass at a time.
  bool interleaves(const StagePass& forward, const StagePass& backward) const {
    return layout_.schedule == PipelineSchedule::kDualPipe && layout_.dualpipe_overlap &&
           layout_.zero != 3 && forward.forward && forward.overlapped && !forward.weights_only &&
           !backward.forward && !backward.weights_only && !backward.defers_weights;
  }

  // Labels what follows with `pass` (its micro-batch and chunk, and its layers for ZeRO-3).
  void enter(const StagePass& pass) {
    graph_.set_pass(pass.micro_batch, pass.chunk);
    pass_layer_begin_ = pass.layer_begin;
    pass_layer_end_ = pass.layer_end;
  }

  // DualPipe's overlapped forward and backward chunks (dualpipe.py's _forward_backward_chunk),
  // interleaved as figure 4 of the report orders them. The forward's layers are paired with the
  // backward's, first with first; in each pair of layers the compute stream runs
  //   attention (F) | MLP (B) | MLP (F) | attention (B)
  // while the expert stream runs, beside them,
  //   combine (B)   | dispatch (F) | dispatch (B) | combine (F),
  // each all-to-all beside the other chunk's compute. With constant pieces and all-to-alls of c
  // each, a pair of MoE layers takes max(attention F, c) + max(MLP B, c) + max(MLP F, c) +
  // max(attention B, c) (tests/executor). Layers left over when the chunks differ in length run
  // after, one chunk at a time. The compute of a pair of layers with an all-to-all runs with the
  // SMs the communication leaves (dualpipe_comm_sm_share). The forward's output leaves with the
  // backward's, after both (its pass is send_after_next).
  void forward_backward_pair(const StagePass& f, const StagePass& b) {
    begin_pass(b);
    buckets_.begin_backward_pass(b.reduces_gradients);
    const OpLabel activation{OpName::kPpActivation, Phase::kForward, kNoLayer};
    const OpLabel gradient{OpName::kPpGradient, Phase::kBackward, kNoLayer};
    enter(f);
    Frontier fcur;
    if (f.receives()) {
      fcur.main = graph_.add_receive(activation, Communicator::kPipeline, -f.downstream,
                                     pipeline_bytes_, f.receive_tag(), {}, f.downstream < 0);
    } else {
      fcur = embedding_forward();
    }
    if (start_gate_ != kNoOp) {
      fcur.side = start_gate_;
      start_gate_ = kNoOp;
    }
    enter(b);
    Frontier bcur;
    if (b.receives()) {
      bcur.main = graph_.add_receive(gradient, Communicator::kPipeline, b.downstream,
                                     pipeline_bytes_, b.receive_tag(), {}, b.downstream < 0);
    } else {
      bcur = head_backward(bcur);
    }
    std::int64_t fl = f.layer_begin;
    std::int64_t bl = b.layer_end - 1;
    for (; fl < f.layer_end && bl >= b.layer_begin; ++fl, --bl) {
      beside_all_to_all_ = layout_.ep > 1 && (model_.is_moe_layer(fl) || model_.is_moe_layer(bl));
      enter(b);
      BackwardLayerState bs = layer_backward_begin(bl, bcur);
      enter(f);
      const ForwardLayerState fs = layer_forward_attention(fl, Phase::kForward, fcur);
      enter(b);
      layer_backward_mlp(bs);
      enter(f);
      fcur = layer_forward_mlp(fs);
      enter(b);
      bcur = layer_backward_attention(bs);
    }
    beside_all_to_all_ = false;
    enter(f);
    for (; fl < f.layer_end; ++fl)
      fcur = layer_forward(fl, Phase::kForward, fcur);
    if (!f.sends()) head_forward(fcur);
    enter(b);
    for (; bl >= b.layer_begin; --bl)
      bcur = layer_backward(bl, bcur);
    if (!b.sends()) embedding_backward(bcur);
    pass_end_ = graph_.last_op();
    if (b.sends()) {
      graph_.add_send(gradient, Communicator::kPipeline, -b.downstream, pipeline_bytes_,
                      b.send_tag(), {bcur.main, bcur.side}, b.downstream < 0);
    }
    last_backward_op_ = graph_.last_op();
    buckets_.end_backward_pass();
    if (f.sends()) send_held(HeldSend{f, fcur}, pass_end_);
  }

  // DualPipe: a forward's output sent after the pass that followed it (dualpipe.py sends the
  // outputs of an overlapped forward and backward together, after both).
  struct HeldSend {
    StagePass pass;
    Frontier out;
  };
  void send_held(const HeldSend& held, OpIndex after) {
    graph_.set_pass(held.pass.micro_batch, held.pass.chunk);
    graph_.add_send({OpName::kPpActivation, Phase::kForward, kNoLayer}, Communicator::kPipeline,
                    held.pass.downstream, pipeline_bytes_, held.pass.send_tag(),
                    {held.out.main, held.out.side, after}, held.pass.downstream < 0);
  }

  // DualPipe's weight step: the weight gradients a deferring backward left, in its order.
  void weight_pass(const StagePass& pass) {
    begin_pass(pass);
    if (deferred_weights_.empty())
      throw std::logic_error("step generator bug: a weight pass without a deferred backward");
    const std::vector<PendingWeight> pending = std::move(deferred_weights_.front());
    deferred_weights_.pop_front();
    buckets_.begin_backward_pass(pass.reduces_gradients);
    for (const PendingWeight& w : pending) {
      const OpIndex op = w.split ? compute(w.label, w.kind, w.cost, {w.after}) : w.after;
      buckets_.add_gradients(op, w.parameters, w.expert);
    }
    pass_end_ = graph_.last_op();
    last_backward_op_ = pass_end_;
    buckets_.end_backward_pass();
  }

  void backward_pass(const StagePass& pass) {
    begin_pass(pass);
    buckets_.begin_backward_pass(pass.reduces_gradients);
    deferring_ = pass.defers_weights;
    const OpLabel transfer{OpName::kPpGradient, Phase::kBackward, kNoLayer};
    const bool reverse = pass.downstream < 0;
    Frontier cur;
    if (pass.receives()) {
      cur.main = graph_.add_receive(transfer, Communicator::kPipeline, pass.downstream,
                                    pipeline_bytes_, pass.receive_tag(), {}, reverse);
    } else {
      cur = head_backward(cur);
    }
    for (std::int64_t layer = pass.layer_end - 1; layer >= pass.layer_begin; --layer)
      cur = layer_backward(layer, cur);
    if (pass.sends()) {
      pass_end_ = graph_.last_op();
      graph_.add_send(transfer, Communicator::kPipeline, -pass.downstream, pipeline_bytes_,
                      pass.send_tag(), {cur.main, cur.side}, reverse);
    } else {
      embedding_backward(cur);
      pass_end_ = graph_.last_op();
    }
    last_backward_op_ = graph_.last_op();
    if (deferring_) deferred_weights_.push_back(std::exchange(pending_weights_, {}));
    deferring_ = false;
    buckets_.end_backward_pass();
  }

  // DualPipe: rank s and rank pp - 1 - s hold copies of the same two stages (rank s's chunk 0 is
  // the other's chunk 1), and each copy's gradients cover only the micro-batches that entered at
  // its end; the two are summed before the optimizer (deepseek-ai/DualPipe,
  // examples/example_dualpipe.py, "Check grads": p0.grad += the mirror's p1.grad and the other way
  // round). A 2-rank AllReduce moves each rank's buffer once each way (2 (n - 1) / n = 1), here as
  // an exchange with the mirror on the pipeline communicator, after the data-parallel reductions:
  // of the shard this rank updates (`parameters`, ZeRO >= 1), or of every gradient (ZeRO 0).
  // Returns the receive, which the optimizer waits for.
  OpIndex sum_mirrored_gradients(const std::vector<OpIndex>& after, double parameters) {
    const int offset = layout_.pp - 1 - 2 * stage_;
    const std::int64_t bytes =
        std::llround(parameters * static_cast<double>(element_bytes(training_.precision)));
    // A tag no pass uses: pass tags stay below micro-batches x virtual stages x 2.
    const std::int64_t tag = spec_.micro_batches() * virtual_stages_ * 2;
    const OpLabel label{OpName::kDpGradients, Phase::kOptimizer, kNoLayer};
    // The reductions run one after another on their stream: the last issued ends last.
    const OpIndex last = *std::max_element(after.begin(), after.end());
    graph_.add_send(label, Communicator::kPipeline, offset, bytes, tag, {last});
    return graph_.add_receive(label, Communicator::kPipeline, offset, bytes, tag, {});
  }

  void optimizer_step() {
    graph_.set_pass(kNoMicroBatch, 0);
    buckets_.issue_deferred_reductions(last_backward_op_);
    // Parameters this rank updates: its share of the stage's parameters (ZeRO >= 1 shards the
    // optimizer over the data-parallel group).
    const RankParameters held = rank_parameters(spec_, stage_);
    double dense = held.dense;
    double expert = held.expert;
    if (layout_.zero >= 1) {
      dense /= layout_.dp * layout_.cp;
      expert /= layout_.expert_dp();
    }
    std::vector<OpIndex> deps = buckets_.reductions();
    if (deps.empty()) deps.push_back(last_backward_op_);
    if (layout_.schedule == PipelineSchedule::kDualPipe)
      deps.push_back(sum_mirrored_gradients(deps, dense + expert));
    const OpLabel label{OpName::kOptimizerStep, Phase::kOptimizer, kNoLayer};
    const OpCost cost = optimizer_step_cost(dense + expert, shape_.element_bytes);
    const OpIndex step = graph_.add_compute(
        label, ComputeKind::kOptimizer, cost.flops, cost.bytes,
        spec_.compute.duration(label.name, label.phase, ComputeKind::kOptimizer, cost), deps);
    if ((layout_.zero == 1 || layout_.zero == 2) && !training_.overlap_param_gather) {
      // The distributed optimizer gathers the updated parameters bucket by bucket.
      buckets_.gather_parameters_after(step);
    }
  }

  const WorkloadSpec& spec_;
  const ModelSpec& model_;
  const ParallelLayout& layout_;
  const TrainingConfig& training_;
  int stage_;
  MicroBatchShape shape_;
  MicroBatchShape head_shape_;  // the output layer's tokens (run_forward: the logit tokens)
  ParameterCount counts_;
  std::vector<std::optional<LayerFigures>> layers_;  // by global layer
  OpGraphBuilder graph_;
  GradientBuckets buckets_;
  Zero3ParameterGathers zero3_;

  bool sequence_parallel_ = false;
  bool tp_comm_overlap_ = false;
  int virtual_stages_ = 1;
  std::int64_t activation_bytes_ = 0;  // b x s' x h x e: a tensor-parallel collective's buffer
  std::int64_t pipeline_bytes_ = 0;    // a pipeline transfer (the sequence-sharded tensor)
  std::int64_t expert_all_to_all_bytes_ = 0;  // a dispatch or combine send buffer
  bool skewed_routing_ = false;               // expert all-to-alls are AllToAllv

  // DualPipe's zero-bubble split (backward_gemm): the weight gradients of the backward being
  // generated, and those of earlier deferring backwards, oldest first, for their weight passes.
  struct PendingWeight {
    OpLabel label;
    ComputeKind kind = ComputeKind::kGemm;
    OpCost cost;
    OpIndex after = kNoOp;  // the input-gradient half (or the operation that computed them)
    double parameters = 0;
    bool expert = false;
    bool split = false;  // a weight-gradient operation to add (else `after` computed them)
  };
  bool deferring_ = false;
  // Inside an interleaved pair of layers with an expert all-to-all (forward_backward_pair): GEMMs
  // and attention run on the SMs the communication kernels leave.
  bool beside_all_to_all_ = false;
  std::vector<PendingWeight> pending_weights_;
  std::deque<std::vector<PendingWeight>> deferred_weights_;
  std::optional<HeldSend> held_send_;
  OpIndex pass_end_ = kNoOp;  // the last computation of the pass just generated

  bool serving_ = false;                        // run_forward: no loss
  double kv_cache_bytes_per_layer_ = 0;         // run_forward: added to each attention core
  double attention_core_flops_per_layer_ = -1;  // run_forward: >= 0 replaces its FLOPs
  std::vector<ClosedBucket> start_gathers_;
  OpIndex start_gate_ = kNoOp;  // the first parameter gather; the first forward waits for it
  std::int64_t pass_layer_begin_ = 0;
  std::int64_t pass_layer_end_ = 0;
  std::int64_t next_kv_tag_ = 0;  // tags of the ring-attention key/value exchanges
  OpIndex last_backward_op_ = kNoOp;
};

}  // namespace

Program generate_stage_program(const WorkloadSpec& spec, int stage) {
  if (stage < 0 || stage >= spec.parallel.pp) throw std::logic_error("stage out of range");
  const auto& p = spec.parallel;
  if ((p.zero == 1 || p.zero == 2) && spec.training.overlap_param_gather && p.dp * p.cp > 1) {
    StageProgramGenerator first(spec, stage);
    first.run();
    StageProgramGenerator second(spec, stage);
    second.gather_at_start(first.closed_buckets());
    return second.run();
  }
  return StageProgramGenerator(spec, stage).run();
}

Program generate_forward_program(const WorkloadSpec& spec, const ForwardPass& pass) {
  if (spec.parallel.pp != 1 || spec.parallel.vpp != 1)
    throw std::logic_error("generate_forward_program needs a single-stage layout");
  return StageProgramGenerator(spec, 0, pass.shape).run_forward(pass);
}

std::vector<std::vector<std::int64_t>> expert_traffic_matrices(const WorkloadSpec& spec) {
  const auto& p = spec.parallel;
  const auto& m = spec.model;
  if (!m.moe_enabled || p.ep == 1) return {};
  const bool relayed = m.moe.dispatch == ExpertDispatch::kRelayed;
  const bool skewed = skewed_load(spec) && m.moe.capacity_factor <= 0;
  if (!skewed && !relayed) return {};
  const std::int64_t tokens =
      spec.training.micro_batch * spec.training.seq_len / p.cp / (p.sequence_parallel() ? p.tp : 1);
  const std::int64_t token_bytes = m.hidden * element_bytes(spec.training.precision);
  const std::int64_t send = tokens * m.moe.top_k * token_bytes;
  std::vector<double> shares =
      m.moe.expert_load.empty()
          ? expert_rank_shares(m.moe.experts, p.ep, spec.training.routing_skew)
          : expert_rank_shares(m.moe.expert_load, p.ep);
  if (m.moe.max_nodes_per_token == 0 && !relayed) {
    return {expert_traffic_matrix(send, shares, false), expert_traffic_matrix(send, shares, true)};
  }
  const std::vector<int> domains =
      expert_group_domains(RankMap(p), spec.rank_domains, spec.parallelism_location);
  const DomainRouting routing =
      route_over_domains(shares, domains, m.moe.top_k, m.moe.max_nodes_per_token);
  if (!relayed) {
    for (std::size_t r = 0; r < shares.size(); ++r)
      shares[r] = routing.rank_copies[r] / static_cast<double>(m.moe.top_k);
    return {expert_traffic_matrix(send, shares, false), expert_traffic_matrix(send, shares, true)};
  }
  return {relayed_traffic_matrix(tokens, token_bytes, routing, domains, false),
          relayed_traffic_matrix(tokens, token_bytes, routing, domains, true)};
}

}  // namespace stepsim::workloads
