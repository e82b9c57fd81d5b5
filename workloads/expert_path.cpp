#include "workloads/expert_path.hpp"

namespace stepsim::workloads {

bool skewed_expert_load(const WorkloadSpec& spec) {
  return spec.training.routing_skew > 0 || !spec.model.moe.expert_load.empty();
}

ExpertPath::ExpertPath(const WorkloadSpec& spec, const MicroBatchShape& shape,
                       OpGraphBuilder& graph, StageCompute& compute, GradientPath& gradients)
    : model_(spec.model),
      graph_(graph),
      compute_(compute),
      gradients_(gradients),
      ep_(spec.parallel.ep),
      all_to_all_bytes_(shape.routed_tokens * spec.model.hidden * shape.element_bytes) {
  // Skewed routing and the relayed dispatch give AllToAllv matrices (expert_traffic_matrices).
  skewed_routing_ = ep_ > 1 && ((skewed_expert_load(spec) && model_.moe.capacity_factor <= 0) ||
                                model_.moe.dispatch == ExpertDispatch::kRelayed);
}

OpIndex ExpertPath::all_to_all(OpName name, Phase phase, std::int64_t layer, bool dispatch_pattern,
                               OpIndex after) {
  if (ep_ == 1) return after;
  return graph_.add_collective(
      {name, phase, layer},
      skewed_routing_ ? CollectiveKind::kAllToAllv : CollectiveKind::kAllToAll,
      Communicator::kExpert, ParallelDim::kEp, all_to_all_bytes_, {after},
      skewed_routing_ ? (dispatch_pattern ? 0u : 1u) : kNoMatrix);
}

OpIndex ExpertPath::route_and_dispatch(Phase phase, std::int64_t layer, const LayerFigures& f,
                                       OpIndex mlp_norm) {
  const OpIndex router =
      compute_.add({OpName::kRouter, phase, layer}, ComputeKind::kGemm, f.costs.router, {mlp_norm});
  return all_to_all(OpName::kEpDispatch, phase, layer, true, router);
}

Frontier ExpertPath::experts_forward(Phase phase, std::int64_t layer, const LayerFigures& f,
                                     OpIndex mlp_norm, OpIndex dispatch) {
  // The shared experts run on the compute stream while the dispatch is in flight.
  OpIndex shared = kNoOp;
  if (model_.moe.shared_experts > 0) {
    shared = compute_.add({OpName::kSharedExperts, phase, layer}, ComputeKind::kGemm,
                          f.costs.shared_experts, {mlp_norm});
  }
  // Each rank computes, on average, its own tokens' share of routed work (top-k experts).
  const OpIndex experts = compute_.add({OpName::kExperts, phase, layer}, ComputeKind::kGroupedGemm,
                                       f.costs.routed_experts, {dispatch});
  return {all_to_all(OpName::kEpCombine, phase, layer, false, experts), shared};
}

OpIndex ExpertPath::combine_backward(std::int64_t layer, OpIndex in) {
  return all_to_all(OpName::kEpCombine, Phase::kBackward, layer, true, in);
}

Frontier ExpertPath::experts_backward(std::int64_t layer, const LayerFigures& f, OpIndex combine,
                                      const Frontier& in, const Frontier& recomputed,
                                      const ParameterGathers& gathers) {
  const Phase bwd = Phase::kBackward;
  const OpIndex experts = gradients_.backward_gemm(
      {OpName::kExperts, bwd, layer}, ComputeKind::kGroupedGemm, f.costs.routed_experts,
      {combine, recomputed.main, recomputed.side, gathers.dense, gathers.routed_experts},
      f.parameters.routed_experts, true);
  const OpIndex dispatch = all_to_all(OpName::kEpDispatch, bwd, layer, false, experts);
  OpIndex shared = kNoOp;
  if (model_.moe.shared_experts > 0) {
    shared = gradients_.backward_gemm({OpName::kSharedExperts, bwd, layer}, ComputeKind::kGemm,
                                      f.costs.shared_experts, {in.main, recomputed.main},
                                      f.parameters.shared_experts, false);
  }
  return {dispatch, shared};
}

OpIndex ExpertPath::router_backward(std::int64_t layer, const LayerFigures& f,
                                    const Frontier& experts) {
  const Phase bwd = Phase::kBackward;
  const OpIndex router =
      gradients_.backward_gemm({OpName::kRouter, bwd, layer}, ComputeKind::kGemm, f.costs.router,
                               {experts.main}, f.parameters.router, false);
  return compute_.add({OpName::kNorm, bwd, layer}, ComputeKind::kElementwise,
                      backward_cost(f.costs.norm), {router, experts.side});
}

}  // namespace stepsim::workloads
