// Parameters one rank holds of each piece of the model, in parameters (not bytes): the sizes of
// the gradients its backward operations produce (gradient buckets) and of the parameters ZeRO-3
// gathers before each layer. Attention projections and dense MLPs are split over the t
// tensor-parallel ranks; norms, routers and shared experts are replicated; the routed experts are
// split over the ep expert-parallel ranks; the embedding and output layers are split by
// vocabulary rows.
#pragma once

#include <cstdint>

#include "workloads/model.hpp"

namespace stepsim::workloads {

struct LayerParameters {
  double qkv = 0;  // attention projections but the output one, latent norms, biases
  double attention_out = 0;
  double norm = 0;  // one of the layer's two norms
  double mlp_up = 0;
  double mlp_down = 0;
  double router = 0;
  double shared_experts = 0;
  double routed_experts = 0;  // the rank's routed experts
  // Everything but the routed experts: the parameters reduced over the data-parallel group.
  double dense() const {
    return qkv + attention_out + 2 * norm + mlp_up + mlp_down + router + shared_experts;
  }
};

// `counts` is count_parameters(model), passed in because callers ask for every layer.
LayerParameters layer_parameters_per_rank(const ModelSpec& model, const ParameterCount& counts,
                                          int tp, int ep, std::int64_t layer);

// The input embedding on the first pipeline stage: the rank's vocabulary rows, and the learned
// position table when there is one.
double embedding_parameters_per_rank(const ModelSpec& model, int tp);

// The output layer's own weights on the last pipeline stage (the final norm aside): untied, or
// tied with an embedding on another stage (Megatron keeps a copy of the word embeddings on the
// last stage); zero when tied and both are on the one stage.
double output_parameters_per_rank(const ModelSpec& model, int tp, int virtual_stages);

}  // namespace stepsim::workloads
