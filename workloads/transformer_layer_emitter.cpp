#include "workloads/transformer_layer_emitter.hpp"

namespace stepsim::workloads {

TransformerLayerEmitter::TransformerLayerEmitter(const WorkloadSpec& spec,
                                                 const MicroBatchShape& shape,
                                                 const LayerEmitterParts& parts)
    : spec_(spec), model_(spec.model), shape_(shape), parts_(parts) {}

Frontier TransformerLayerEmitter::forward(const StagePass& pass, std::int64_t layer, Phase phase,
                                          Frontier in) {
  return forward_mlp(forward_attention(pass, layer, phase, in));
}

TransformerLayerEmitter::ForwardState TransformerLayerEmitter::forward_attention(
    const StagePass& pass, std::int64_t layer, Phase phase, Frontier in) {
  label(pass);
  const LayerFigures& f = parts_.figures.of(layer);
  const LayerCosts& cost = f.costs;
  ParameterGathers gathers;
  if (phase == Phase::kForward) gathers = parts_.zero3.for_layer(Phase::kForward, layer, in.main);
  const OpIndex attention_norm =
      parts_.compute.add({OpName::kNorm, phase, layer}, ComputeKind::kElementwise, cost.norm,
                         {in.main, in.side, gathers.dense, gathers.routed_experts});
  if (phase == Phase::kForward && layer + 1 < pass.layer_end)
    parts_.zero3.prefetch(Phase::kForward, layer + 1, attention_norm);
  const GemmInput input = parts_.tensor.gather_input(phase, layer, attention_norm);
  const OpIndex qkv =
      parts_.compute.add({OpName::kQkv, phase, layer}, ComputeKind::kGemm, cost.qkv, {input.gemm});
  const OpIndex core = parts_.attention.core(phase, layer, cost.attention_core, qkv, input.beside);
  const OpIndex out = parts_.compute.add({OpName::kAttentionOut, phase, layer}, ComputeKind::kGemm,
                                         cost.attention_out, {core});
  const Frontier reduced = parts_.tensor.reduce_output(phase, layer, core, out);
  ForwardState state{&pass, layer, phase, kNoOp, kNoOp};
  state.mlp_norm = parts_.compute.add({OpName::kNorm, phase, layer}, ComputeKind::kElementwise,
                                      cost.norm, {reduced.main, reduced.side});
  if (model_.is_moe_layer(layer))
    state.dispatch = parts_.experts.route_and_dispatch(phase, layer, f, state.mlp_norm);
  return state;
}

Frontier TransformerLayerEmitter::forward_mlp(const ForwardState& state) {
  label(*state.pass);
  const std::int64_t layer = state.layer;
  const Phase phase = state.phase;
  const LayerFigures& f = parts_.figures.of(layer);
  if (model_.is_moe_layer(layer))
    return parts_.experts.experts_forward(phase, layer, f, state.mlp_norm, state.dispatch);
  const GemmInput input = parts_.tensor.gather_input(phase, layer, state.mlp_norm);
  const OpIndex up = parts_.compute.add({OpName::kMlpUp, phase, layer}, ComputeKind::kGemm,
                                        f.costs.mlp_up, {input.gemm});
  const OpIndex down = parts_.compute.add({OpName::kMlpDown, phase, layer}, ComputeKind::kGemm,
                                          f.costs.mlp_down, {up, input.beside});
  return parts_.tensor.reduce_output(phase, layer, up, down);
}

Frontier TransformerLayerEmitter::backward(const StagePass& pass, std::int64_t layer, Frontier in) {
  BackwardState state = backward_begin(pass, layer, in);
  backward_mlp(state);
  return backward_attention(state);
}

TransformerLayerEmitter::BackwardState TransformerLayerEmitter::backward_begin(
    const StagePass& pass, std::int64_t layer, Frontier in) {
  label(pass);
  const Phase bwd = Phase::kBackward;
  BackwardState state;
  state.pass = &pass;
  state.layer = layer;
  state.in = in;
  state.gathers = parts_.zero3.for_layer(bwd, layer, in.main);
  if (layer > pass.layer_begin) parts_.zero3.prefetch(bwd, layer - 1, in.main);
  state.recomputed = recompute(layer, pass, in, state.gathers);
  if (model_.is_moe_layer(layer)) state.combine = parts_.experts.combine_backward(layer, in.main);
  return state;
}

// What the layer's backward needs again of its forward, run right before it.
Frontier TransformerLayerEmitter::recompute(std::int64_t layer, const StagePass& pass, Frontier in,
                                            const ParameterGathers& gathers) {
  const Recompute mode = spec_.training.recompute;
  if (mode == Recompute::kFull) {
    // Megatron's full (uniform, 1 layer) recomputation: the layer's forward runs again,
    // communication included.
    return forward(pass, layer, Phase::kRecompute, {in.main, gathers.dense});
  }
  if (mode != Recompute::kNormAndMlaUp) return in;
  // DeepSeek-V3 (section 3.3): the two RMSNorms and the MLA up-projections run again before the
  // layer's backward, which needs their outputs; they are not stored.
  const LayerCosts& cost = parts_.figures.of(layer).costs;
  const Phase re = Phase::kRecompute;
  OpIndex last = parts_.compute.add({OpName::kNorm, re, layer}, ComputeKind::kElementwise,
                                    cost.norm, {in.main, gathers.dense});
  const OpCost up = mla_up_projection_cost(model_, shape_);
  if (up.flops > 0)
    last = parts_.compute.add({OpName::kQkv, re, layer}, ComputeKind::kGemm, up, {last});
  last =
      parts_.compute.add({OpName::kNorm, re, layer}, ComputeKind::kElementwise, cost.norm, {last});
  return {last, kNoOp};
}

void TransformerLayerEmitter::backward_mlp(BackwardState& state) {
  label(*state.pass);
  const LayerFigures& f = parts_.figures.of(state.layer);
  if (!model_.is_moe_layer(state.layer)) {
    state.mlp_norm = dense_mlp_backward(state, f);
    return;
  }
  state.experts = parts_.experts.experts_backward(state.layer, f, state.combine, state.in,
                                                  state.recomputed, state.gathers);
}

Frontier TransformerLayerEmitter::backward_attention(BackwardState& state) {
  label(*state.pass);
  const LayerFigures& f = parts_.figures.of(state.layer);
  if (model_.is_moe_layer(state.layer))
    state.mlp_norm = parts_.experts.router_backward(state.layer, f, state.experts);
  parts_.gradients.add_gradients(state.mlp_norm, f.parameters.norm, false);
  return attention_backward(state.layer, f, state.mlp_norm);
}

// Returns the backward of the MLP's norm.
OpIndex TransformerLayerEmitter::dense_mlp_backward(const BackwardState& state,
                                                    const LayerFigures& f) {
  const Phase bwd = Phase::kBackward;
  const std::int64_t layer = state.layer;
  GradientPath& gradients = parts_.gradients;
  const GemmInput input = parts_.tensor.gather_input(bwd, layer, state.in.main);
  const OpIndex down =
      gradients.backward_gemm({OpName::kMlpDown, bwd, layer}, ComputeKind::kGemm, f.costs.mlp_down,
                              {input.gemm, state.recomputed.main, state.recomputed.side,
                               state.gathers.dense, state.gathers.routed_experts},
                              f.parameters.mlp_down, false);
  const OpIndex up =
      gradients.backward_gemm({OpName::kMlpUp, bwd, layer}, ComputeKind::kGemm, f.costs.mlp_up,
                              {down, input.beside}, f.parameters.mlp_up, false);
  const Frontier reduced = parts_.tensor.reduce_output(bwd, layer, down, up);
  return parts_.compute.add({OpName::kNorm, bwd, layer}, ComputeKind::kElementwise,
                            backward_cost(f.costs.norm), {reduced.main, reduced.side});
}

// The backward of the attention block, from the backward of the MLP's norm.
Frontier TransformerLayerEmitter::attention_backward(std::int64_t layer, const LayerFigures& f,
                                                     OpIndex mlp_norm) {
  const Phase bwd = Phase::kBackward;
  const LayerCosts& cost = f.costs;
  GradientPath& gradients = parts_.gradients;
  const GemmInput input = parts_.tensor.gather_input(bwd, layer, mlp_norm);
  const OpIndex out =
      gradients.backward_gemm({OpName::kAttentionOut, bwd, layer}, ComputeKind::kGemm,
                              cost.attention_out, {input.gemm}, f.parameters.attention_out, false);
  OpIndex core_in = out;
  if (spec_.training.recompute == Recompute::kSelective) {
    // Selective recomputation (Korthikanti et al.): only the attention core runs again.
    core_in =
        parts_.attention.core(Phase::kRecompute, layer, cost.attention_core, out, input.beside);
  }
  const OpIndex core =
      parts_.attention.core(bwd, layer, backward_cost(cost.attention_core), core_in, input.beside);
  const OpIndex qkv = gradients.backward_gemm({OpName::kQkv, bwd, layer}, ComputeKind::kGemm,
                                              cost.qkv, {core}, f.parameters.qkv, false);
  const Frontier reduced = parts_.tensor.reduce_output(bwd, layer, core, qkv);
  const OpIndex norm = parts_.compute.add({OpName::kNorm, bwd, layer}, ComputeKind::kElementwise,
                                          backward_cost(cost.norm), {reduced.main, reduced.side});
  gradients.add_gradients(norm, f.parameters.norm, false);
  return {norm, kNoOp};
}

}  // namespace stepsim::workloads
