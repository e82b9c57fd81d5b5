// The compute operations of a generated step (step generator): each timed by the workload's
// compute model from its cost (FLOPs and HBM bytes, or its kernels), on the compute stream.
#pragma once

#include <initializer_list>

#include "workloads/op_cost.hpp"
#include "workloads/op_graph_builder.hpp"
#include "workloads/workload_spec.hpp"

namespace stepsim::workloads {

class StageCompute {
 public:
  // Adds operations to `graph`; `spec` and `graph` must outlive it. `roofline`: time every
  // operation from its FLOPs and bytes (an inference server's pass, whose attention also reads
  // the KV cache; serving_spec.hpp), else from its kernels where the compute model has them.
  StageCompute(const WorkloadSpec& spec, OpGraphBuilder& graph, bool roofline);

  OpIndex add(const OpLabel& label, ComputeKind kind, const OpCost& cost,
              std::initializer_list<OpIndex> deps);

  // DualPipe's overlapped pair of layers with an expert all-to-all: while set, GEMMs and
  // attention run on the SMs the communication kernels leave, 1 - dualpipe_comm_sm_share of
  // them, and take 1 / (1 - share) times as long.
  void set_beside_all_to_all(bool beside) { beside_all_to_all_ = beside; }

 private:
  const WorkloadSpec& spec_;
  OpGraphBuilder& graph_;
  bool roofline_ = false;
  bool beside_all_to_all_ = false;
};

}  // namespace stepsim::workloads
