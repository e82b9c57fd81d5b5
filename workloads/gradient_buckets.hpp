// Data-parallel gradient reduction in buckets, as Megatron-LM's DistributedDataParallel and
// PyTorch DDP issue it, and the ZeRO-1/2 parameter gathers that follow the optimizer bucket by
// bucket (Megatron's distributed optimizer).
//
// Backward operations add the gradients they produce, in backward order, to one open bucket per
// kind: dense gradients are reduced over the data-parallel x context-parallel group (Communicator
// kData), expert gradients over the expert-data-parallel group (kExpertData). A bucket closes
// once it holds the bucket size (training.grad_bucket) and at the end of the backward pass; its
// collective (ZeRO 0: AllReduce, ZeRO 1-3: ReduceScatter, of its bytes in the training precision)
// waits for the operation that produced its last gradient, so it overlaps with the rest of the
// backward, or, without overlap_grad_reduce, is issued after the whole backward. Gradients are
// reduced in training.grad_reduce_dtype (FP32 main grads by default); ZeRO's parameter gathers
// move the same parameters in the training precision.
#pragma once

#include <cstdint>
#include <vector>

#include "workloads/op_graph_builder.hpp"
#include "workloads/workload_spec.hpp"

namespace stepsim::workloads {

// A closed bucket: its gradients' bytes (in the reduction's precision), its parameters' bytes
// (in the training precision: what ZeRO gathers back) and the group they are reduced over.
struct ClosedBucket {
  std::int64_t bytes = 0;
  std::int64_t parameter_bytes = 0;
  Communicator group = Communicator::kData;
};

class GradientBuckets {
 public:
  // Adds its collectives to `graph`, which must outlive it.
  GradientBuckets(const WorkloadSpec& spec, OpGraphBuilder& graph);

  // Starts a backward pass. Only the last backward pass of each model chunk reduces gradients
  // (the passes before accumulate them locally: no_sync).
  void begin_backward_pass(bool reduces_gradients);
  // `producer` computed the gradients of `parameters` parameters (routed experts or dense).
  void add_gradients(OpIndex producer, double parameters, bool routed_experts);
  // Ends the pass: a reducing pass closes the partly filled buckets, dense first.
  void end_backward_pass();

  // Without overlap_grad_reduce: issues every bucket's collective now, all waiting for
  // `last_backward_op`. Nothing with it (they were issued as they closed).
  void issue_deferred_reductions(OpIndex last_backward_op);
  // The collectives issued, in order: what the optimizer step waits for.
  const std::vector<OpIndex>& reductions() const { return reductions_; }
  // The buckets closed, in order.
  const std::vector<ClosedBucket>& closed() const { return closed_; }

  // ZeRO-1/2: gathers the updated parameters, bucket by bucket, after `optimizer_step`.
  void gather_parameters_after(OpIndex optimizer_step);

 private:
  struct OpenBucket {
    double parameters = 0;
    std::int64_t bytes = 0;
    OpIndex last_producer = kNoOp;
  };

  void close(bool routed_experts);
  void issue_reduction(const ClosedBucket& bucket, OpIndex after);

  OpGraphBuilder& graph_;
  int zero_stage_ = 0;
  bool overlap_grad_reduce_ = true;
  std::int64_t bucket_bytes_ = 0;
  std::int64_t grad_element_bytes_ = 4;
  std::int64_t parameter_element_bytes_ = 2;
  int dense_group_size_ = 1;
  int expert_group_size_ = 1;

  bool reducing_ = false;
  OpenBucket dense_;
  OpenBucket expert_;
  std::vector<ClosedBucket> closed_;
  std::vector<OpIndex> reductions_;
};

// ZeRO-1/2 with overlap_param_gather (Megatron's --overlap-param-gather): the parameter gathers
// of the previous step's optimizer, `buckets` in the order the backward closed them, issued at
// the start of this step in forward order (the reverse) while the forward runs. Returns the first
// gather, which the first forward waits for; kNoOp without buckets.
OpIndex gather_parameters_at_step_start(const std::vector<ClosedBucket>& buckets,
                                        OpGraphBuilder& graph);

}  // namespace stepsim::workloads
