#include "workloads/zero3_parameter_gathers.hpp"

#include <cmath>

namespace stepsim::workloads {

Zero3ParameterGathers::Zero3ParameterGathers(const WorkloadSpec& spec, OpGraphBuilder& graph)
    : graph_(graph),
      model_(spec.model),
      counts_(count_parameters(spec.model)),
      enabled_(spec.parallel.zero == 3),
      prefetches_(spec.parallel.zero == 3 && spec.training.overlap_param_gather),
      tp_(spec.parallel.tp),
      ep_(spec.parallel.ep),
      element_bytes_(element_bytes(spec.training.precision)),
      dense_group_size_(spec.parallel.dp * spec.parallel.cp),
      expert_group_size_(spec.parallel.expert_dp()) {}

ParameterGathers Zero3ParameterGathers::gather(Phase phase, std::int64_t layer, double dense,
                                               double routed_experts, OpIndex after) {
  ParameterGathers gathers;
  if (!enabled_) return gathers;
  const OpLabel label{OpName::kZeroParamGather, phase, layer};
  const auto e = static_cast<double>(element_bytes_);
  if (dense_group_size_ > 1 && dense > 0) {
    gathers.dense = graph_.add_collective(label, CollectiveKind::kAllGather, Communicator::kData,
                                          ParallelDim::kDp, std::llround(dense * e), {after});
  }
  if (expert_group_size_ > 1 && routed_experts > 0) {
    gathers.routed_experts =
        graph_.add_collective(label, CollectiveKind::kAllGather, Communicator::kExpertData,
                              ParallelDim::kDp, std::llround(routed_experts * e), {after});
  }
  return gathers;
}

ParameterGathers Zero3ParameterGathers::for_layer(Phase phase, std::int64_t layer,
                                                  OpIndex previous_done) {
  if (!enabled_) return {};
  if (prefetches_ && prefetched_key_ == key(phase, layer)) return prefetched_;
  const LayerParameters params = layer_parameters_per_rank(model_, counts_, tp_, ep_, layer);
  return gather(phase, layer, params.dense(), params.routed_experts, previous_done);
}

void Zero3ParameterGathers::prefetch(Phase phase, std::int64_t next_layer, OpIndex after) {
  if (!prefetches_) return;
  const LayerParameters params = layer_parameters_per_rank(model_, counts_, tp_, ep_, next_layer);
  prefetched_ = gather(phase, next_layer, params.dense(), params.routed_experts, after);
  prefetched_key_ = key(phase, next_layer);
}

}  // namespace stepsim::workloads
