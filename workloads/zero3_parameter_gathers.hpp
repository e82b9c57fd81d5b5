// ZeRO-3 / FSDP parameter gathers: each rank holds 1/n of every parameter, so before a layer's
// forward, and again before its backward, the layer's parameters are AllGathered over the
// data-parallel x context-parallel group (dense) and the expert-data-parallel group (routed
// experts), per micro-batch. With overlap_param_gather the gather for the next layer is issued
// one layer ahead (FSDP's prefetch); without it, right before the layer, after the previous one.
// Nothing is gathered unless the layout's zero stage is 3.
#pragma once

#include <cstdint>

#include "workloads/layer_parameters.hpp"
#include "workloads/op_graph_builder.hpp"
#include "workloads/workload_spec.hpp"

namespace stepsim::workloads {

// The gathers an operation waits for; kNoOp where none was needed.
struct ParameterGathers {
  OpIndex dense = kNoOp;
  OpIndex routed_experts = kNoOp;
};

class Zero3ParameterGathers {
 public:
  // Adds its collectives to `graph`; `spec` and `graph` must outlive it.
  Zero3ParameterGathers(const WorkloadSpec& spec, OpGraphBuilder& graph);

  // Gathers `dense` and `routed_experts` parameters (per rank, before sharding) after `after`,
  // labelled with `phase` and `layer` (kNoLayer: the embedding or the output layer).
  ParameterGathers gather(Phase phase, std::int64_t layer, double dense, double routed_experts,
                          OpIndex after);

  // The gathers `layer` waits for in this pass: the ones prefetched for it, or new ones issued
  // after `previous_done`.
  ParameterGathers for_layer(Phase phase, std::int64_t layer, OpIndex previous_done);
  // With overlap_param_gather: issues the gathers of `next_layer` after `after`, for for_layer.
  void prefetch(Phase phase, std::int64_t next_layer, OpIndex after);
  // A new pass starts: nothing is prefetched.
  void begin_pass() { prefetched_key_ = -1; }

 private:
  static std::int64_t key(Phase phase, std::int64_t layer) {
    return layer * 2 + (phase == Phase::kBackward ? 1 : 0);
  }

  OpGraphBuilder& graph_;
  const ModelSpec& model_;
  ParameterCount counts_;
  bool enabled_ = false;
  bool prefetches_ = false;
  int tp_ = 1;
  int ep_ = 1;
  std::int64_t element_bytes_ = 2;
  int dense_group_size_ = 1;
  int expert_group_size_ = 1;
  ParameterGathers prefetched_;
  std::int64_t prefetched_key_ = -1;  // key(phase, layer) of prefetched_; -1: none
};

}  // namespace stepsim::workloads
