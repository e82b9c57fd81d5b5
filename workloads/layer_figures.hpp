// The costs and parameters of each transformer layer of a generated step, computed once per
// layer (every pass of the step asks again).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "workloads/layer_costs.hpp"
#include "workloads/layer_parameters.hpp"
#include "workloads/workload_spec.hpp"

namespace stepsim::workloads {

struct LayerFigures {
  LayerCosts costs;            // forward costs of one micro-batch of `shape` (layer_costs.hpp)
  LayerParameters parameters;  // parameters per rank (layer_parameters.hpp)
};

class LayerFigureCache {
 public:
  // `spec` must outlive the cache. `kv_cache_bytes_per_layer` (bytes) is added to each attention
  // core's HBM traffic; `attention_core_flops_per_layer`, when >= 0, replaces its FLOPs (an
  // inference server's pass, generate_forward_program).
  LayerFigureCache(const WorkloadSpec& spec, const MicroBatchShape& shape,
                   double kv_cache_bytes_per_layer = 0, double attention_core_flops_per_layer = -1);

  // The figures of global layer `layer` (0 <= layer < model.layers).
  const LayerFigures& of(std::int64_t layer);

 private:
  const WorkloadSpec& spec_;
  MicroBatchShape shape_;
  ParameterCount counts_;
  double kv_cache_bytes_per_layer_ = 0;
  double attention_core_flops_per_layer_ = -1;
  std::vector<std::optional<LayerFigures>> layers_;  // by global layer
};

}  // namespace stepsim::workloads
