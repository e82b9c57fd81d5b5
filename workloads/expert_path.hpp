// The mixture-of-experts part of a generated step's MoE layers (expert parallelism over ep ranks):
// forward, the router after the MLP's norm, the dispatch all-to-all, the shared experts beside it,
// the routed experts (a grouped GEMM) and the combine all-to-all; backward, the same in reverse
// (the combine's backward carries the dispatch pattern, the dispatch's the combine pattern).
// Each all-to-all sends the rank's routed tokens, routed_tokens x h elements of the training
// precision, on the expert communicator: an AllToAll with equal shares, or an AllToAllv with
// expert_traffic_matrices' pattern (0: dispatch, 1: combine) under skewed routing or the relayed
// dispatch. No communication at ep 1.
#pragma once

#include <cstdint>

#include "workloads/frontier.hpp"
#include "workloads/gradient_path.hpp"
#include "workloads/layer_figures.hpp"
#include "workloads/op_graph_builder.hpp"
#include "workloads/stage_compute.hpp"
#include "workloads/workload_spec.hpp"
#include "workloads/zero3_parameter_gathers.hpp"

namespace stepsim::workloads {

// Whether routed tokens spread unequally: a Zipf skew or a per-expert load table.
bool skewed_expert_load(const WorkloadSpec& spec);

class ExpertPath {
 public:
  // `spec`, `graph`, `compute` and `gradients` must outlive it.
  ExpertPath(const WorkloadSpec& spec, const MicroBatchShape& shape, OpGraphBuilder& graph,
             StageCompute& compute, GradientPath& gradients);

  // Forward of MoE layer `layer` (figures `f`): the router after the MLP's norm and the dispatch;
  // returns the dispatch (the router at ep 1).
  OpIndex route_and_dispatch(Phase phase, std::int64_t layer, const LayerFigures& f,
                             OpIndex mlp_norm);
  // Then the shared experts (after the norm) and the routed experts (after the dispatch) and the
  // combine: returns {combine, shared experts}.
  Frontier experts_forward(Phase phase, std::int64_t layer, const LayerFigures& f, OpIndex mlp_norm,
                           OpIndex dispatch);

  // Backward: the combine's backward, after the incoming gradient `in`.
  OpIndex combine_backward(std::int64_t layer, OpIndex in);
  // The routed experts' backward after the combine's, `recomputed` (the layer's recomputed
  // forward) and the layer's ZeRO-3 `gathers`, then the dispatch's backward; the shared experts'
  // after `in` and `recomputed`. Returns {dispatch, shared experts}.
  Frontier experts_backward(std::int64_t layer, const LayerFigures& f, OpIndex combine,
                            const Frontier& in, const Frontier& recomputed,
                            const ParameterGathers& gathers);
  // The router's backward and the MLP norm's after `experts` (experts_backward's result);
  // returns the norm's backward.
  OpIndex router_backward(std::int64_t layer, const LayerFigures& f, const Frontier& experts);

 private:
  OpIndex all_to_all(OpName name, Phase phase, std::int64_t layer, bool dispatch_pattern,
                     OpIndex after);

  const ModelSpec& model_;
  OpGraphBuilder& graph_;
  StageCompute& compute_;
  GradientPath& gradients_;
  int ep_ = 1;
  std::int64_t all_to_all_bytes_ = 0;  // a dispatch or combine send buffer
  bool skewed_routing_ = false;        // the all-to-alls are AllToAllv
};

}  // namespace stepsim::workloads
