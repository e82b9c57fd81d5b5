#include "workloads/layer_figures.hpp"

namespace stepsim::workloads {

LayerFigureCache::LayerFigureCache(const WorkloadSpec& spec, const MicroBatchShape& shape,
                                   double kv_cache_bytes_per_layer,
                                   double attention_core_flops_per_layer)
    : spec_(spec),
      shape_(shape),
      counts_(count_parameters(spec.model)),
      kv_cache_bytes_per_layer_(kv_cache_bytes_per_layer),
      attention_core_flops_per_layer_(attention_core_flops_per_layer) {
  layers_.resize(static_cast<std::size_t>(spec.model.layers));
}

const LayerFigures& LayerFigureCache::of(std::int64_t layer) {
  std::optional<LayerFigures>& figures = layers_.at(static_cast<std::size_t>(layer));
  if (!figures) {
    const ParallelLayout& layout = spec_.parallel;
    figures =
        LayerFigures{layer_forward_costs(spec_.model, shape_, layer),
                     layer_parameters_per_rank(spec_.model, counts_, layout.tp, layout.ep, layer)};
    figures->costs.attention_core.bytes += kv_cache_bytes_per_layer_;
    if (attention_core_flops_per_layer_ >= 0)
      figures->costs.attention_core.flops = attention_core_flops_per_layer_;
  }
  return *figures;
}

}  // namespace stepsim::workloads
