// The data-parallel / ZeRO gradient path of a generated step: the gradients each backward
// operation produces go into GradientBuckets (reduced over the data-parallel groups, overlapped
// with the backward), DualPipe's zero-bubble backwards defer their weight-gradient halves to a
// later weight pass, DualPipe's mirrored copies sum their gradients, and the step ends with the
// optimizer and (ZeRO-1/2, Megatron's distributed optimizer) the parameter gathers. With
// overlap_param_gather those gathers open the next step instead (gather_at_start).
//
// Sizes: a bucket's collective moves its gradients' bytes in the training precision
// (gradient_buckets.hpp); over a step the dense buckets hold every dense parameter of the rank
// once, so an AllReduce's bus traffic is 2 (n - 1) / n of the rank's gradient bytes.
#pragma once

#include <cstdint>
#include <deque>
#include <initializer_list>
#include <utility>
#include <vector>

#include "workloads/gradient_buckets.hpp"
#include "workloads/op_cost.hpp"
#include "workloads/op_graph_builder.hpp"
#include "workloads/pipeline_walk.hpp"
#include "workloads/stage_compute.hpp"
#include "workloads/workload_spec.hpp"

namespace stepsim::workloads {

class GradientPath {
 public:
  // For pipeline stage `stage`, with `precision_bytes` per parameter of the training precision;
  // `spec`, `graph` and `compute` must outlive it.
  GradientPath(const WorkloadSpec& spec, int stage, std::int64_t precision_bytes,
               OpGraphBuilder& graph, StageCompute& compute);

  // ZeRO-1/2 with overlap_param_gather: the buckets of the previous step's optimizer (closed by
  // an earlier generation of the same program) are gathered at the start of this step.
  void gather_at_start(std::vector<ClosedBucket> buckets) { start_gathers_ = std::move(buckets); }
  const std::vector<ClosedBucket>& closed_buckets() const { return buckets_.closed(); }
  // Issues those gathers; returns the first, which the first forward waits for (kNoOp: none).
  OpIndex issue_start_gathers() { return gather_parameters_at_step_start(start_gathers_, graph_); }

  // A backward pass starts (it defers its weight gradients when pass.defers_weights).
  void begin_backward(const StagePass& pass);
  // The backward of an operation with weights (forward cost `forward`) whose weight gradients
  // (`parameters`, routed experts or dense) go to the buckets: one operation computing both
  // halves (twice the forward), or, in a deferring backward, the input-gradient half now and the
  // weight-gradient half (the forward's cost again) in the weight pass that completes it.
  OpIndex backward_gemm(const OpLabel& label, ComputeKind kind, const OpCost& forward,
                        std::initializer_list<OpIndex> deps, double parameters, bool expert);
  // Gradients computed by `producer` itself (norms, the embedding); a deferring backward hands
  // them to the buckets in its weight pass.
  void add_gradients(OpIndex producer, double parameters, bool expert);
  // The backward pass ended with `last_op`.
  void end_backward(OpIndex last_op);

  // DualPipe's weight pass: the weight gradients the oldest deferring backward left, in order.
  void weight_pass(const StagePass& pass);
  // Throws std::logic_error when a deferring backward's weights were never computed.
  void check_weights_done() const;

  // The optimizer step after the last backward, waiting for every gradient reduction.
  void optimizer_step();

 private:
  // One weight gradient a deferring backward left (backward_gemm, add_gradients).
  struct PendingWeight {
    OpLabel label;
    ComputeKind kind = ComputeKind::kGemm;
    OpCost cost;
    OpIndex after = kNoOp;  // the input-gradient half (or the operation that computed them)
    double parameters = 0;
    bool expert = false;
    bool split = false;  // a weight-gradient operation to add (else `after` computed them)
  };

  OpIndex sum_mirrored_gradients(const std::vector<OpIndex>& after, double parameters);

  const WorkloadSpec& spec_;
  int stage_;
  std::int64_t element_bytes_ = 2;
  OpGraphBuilder& graph_;
  StageCompute& compute_;
  GradientBuckets buckets_;
  std::vector<ClosedBucket> start_gathers_;
  bool deferring_ = false;
  std::vector<PendingWeight> pending_weights_;               // of the backward being generated
  std::deque<std::vector<PendingWeight>> deferred_weights_;  // of earlier ones, oldest first
  OpIndex last_backward_op_ = kNoOp;
};

}  // namespace stepsim::workloads
