// The attention core of a generated step with its context-parallel communication, per layer and
// micro-batch (the sequence split over cp ranks, T = b x s / cp tokens per rank):
//  - cp 1: one fused attention operation;
//  - ring attention (Megatron-LM / Transformer Engine): cp blocks, the keys and values of block
//    j + 1 arriving from the previous rank (send +1, receive -1 on the context communicator)
//    while block j computes; T x (kv + out width) / tp elements per exchange, twice that in the
//    backward (the blocks and their gradients);
//  - Ulysses (DeepSpeed): an all-to-all before the core (T x (q + kv + out width) / tp elements
//    forward) and one after (T x out width / tp), the two swapped in the backward.
#pragma once

#include <cstdint>

#include "workloads/layer_costs.hpp"
#include "workloads/op_graph_builder.hpp"
#include "workloads/stage_compute.hpp"
#include "workloads/workload_spec.hpp"

namespace stepsim::workloads {

class ContextParallelAttention {
 public:
  // `spec`, `graph` and `compute` must outlive it.
  ContextParallelAttention(const WorkloadSpec& spec, const MicroBatchShape& shape,
                           OpGraphBuilder& graph, StageCompute& compute);

  // The attention core of `layer` costing `cost` (the whole core's FLOPs and bytes) after
  // `after`, also waiting for `also` (kNoOp: nothing; the SP AllGather under tp_comm_overlap).
  // Returns the operation the attention output projection waits for.
  OpIndex core(Phase phase, std::int64_t layer, const OpCost& cost, OpIndex after, OpIndex also);

 private:
  OpIndex ulysses(Phase phase, std::int64_t layer, const OpCost& cost, OpIndex after, OpIndex also);
  OpIndex ring(Phase phase, std::int64_t layer, const OpCost& cost, OpIndex after, OpIndex also);

  const WorkloadSpec& spec_;
  MicroBatchShape shape_;
  OpGraphBuilder& graph_;
  StageCompute& compute_;
  std::int64_t next_kv_tag_ = 0;  // tags of the ring's key/value exchanges, one per exchange
};

}  // namespace stepsim::workloads
