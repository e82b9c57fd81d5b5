#include "workloads/layer_parameters.hpp"

#include "workloads/layer_costs.hpp"

namespace stepsim::workloads {

namespace {

double to_double(std::int64_t v) {
  return static_cast<double>(v);
}

}  // namespace

LayerParameters layer_parameters_per_rank(const ModelSpec& model, const ParameterCount& counts,
                                          int tp, int ep, std::int64_t layer) {
  LayerParameters params;
  const double out_weights = to_double(model.attn_out_width() * model.hidden);
  params.attention_out = out_weights / tp;
  params.qkv = (counts.attention - out_weights) / tp;
  params.norm = counts.norms / 2;
  if (model.is_moe_layer(layer)) {
    params.router = counts.router;
    params.shared_experts = to_double(model.moe.shared_experts) * counts.expert;
    params.routed_experts = to_double(model.moe.experts / ep) * counts.expert;
  } else {
    // The up projection holds 2 of a gated MLP's 3 matrices (gate and up), 1 of a plain one's 2.
    const double up_share = model.gated_mlp ? 2.0 / 3.0 : 0.5;
    params.mlp_up = counts.dense_mlp * up_share / tp;
    params.mlp_down = counts.dense_mlp * (1 - up_share) / tp;
  }
  return params;
}

double embedding_parameters_per_rank(const ModelSpec& model, int tp) {
  double params = to_double(vocabulary_rows_per_rank(model, tp)) * to_double(model.hidden);
  if (model.position == PositionKind::kLearned)
    params += to_double(model.max_positions * model.hidden);
  return params;
}

double output_parameters_per_rank(const ModelSpec& model, int tp, int virtual_stages) {
  const bool own = !model.tied_embeddings || virtual_stages > 1;
  return own ? to_double(vocabulary_rows_per_rank(model, tp)) * to_double(model.hidden) : 0.0;
}

}  // namespace stepsim::workloads
