// The pass walker of the step generator: generates the program of one pipeline stage's ranks by
// walking its passes in schedule order (pipeline_walk.hpp). A forward pass opens with the
// pipeline receive or the embedding, runs its chunk's layers in order and closes with the send or
// the output layer; a backward pass opens with the receive or the loss, runs the layers in
// reverse and closes with the send or the embedding's backward; DualPipe's weight passes complete
// the deferring backwards, and its overlapped forward-and-backward chunks interleave layer by
// layer. The step ends with the optimizer. The concerns each have their emitter:
// transformer_layer_emitter (with tensor_parallel_comm, context_parallel_attention and
// expert_path), model_ends_emitter, pipeline_transfers and gradient_path.
#pragma once

#include <memory>
#include <vector>

#include "workloads/context_parallel_attention.hpp"
#include "workloads/expert_path.hpp"
#include "workloads/gradient_path.hpp"
#include "workloads/layer_figures.hpp"
#include "workloads/model_ends_emitter.hpp"
#include "workloads/pipeline_transfers.hpp"
#include "workloads/program.hpp"
#include "workloads/stage_compute.hpp"
#include "workloads/step_generator.hpp"
#include "workloads/tensor_parallel_comm.hpp"
#include "workloads/transformer_layer_emitter.hpp"
#include "workloads/zero3_parameter_gathers.hpp"

namespace stepsim::workloads {

class StagePassWalker {
 public:
  // A training step of pipeline stage `stage` of a valid spec (from parse_workload); `spec`
  // must outlive the walker.
  StagePassWalker(const WorkloadSpec& spec, int stage);
  // An inference server's forward pass of a single-stage spec.
  StagePassWalker(const WorkloadSpec& spec, const ForwardPass& forward);
  StagePassWalker(const StagePassWalker&) = delete;
  StagePassWalker& operator=(const StagePassWalker&) = delete;

  // ZeRO-1/2 with overlap_param_gather: the buckets of the previous step's optimizer (from a
  // first generation of the same program) are gathered at the start of this step.
  void gather_at_start(std::vector<ClosedBucket> buckets);
  const std::vector<ClosedBucket>& closed_buckets() const { return gradients_.closed_buckets(); }

  // The training step; call once.
  Program run();
  // The inference server's forward pass (the second constructor's); call once.
  Program run_forward();

 private:
  StagePassWalker(const WorkloadSpec& spec, int stage, const MicroBatchShape& shape,
                  const ForwardPass* forward);

  void begin_pass(const StagePass& pass);
  Frontier open_forward(const StagePass& pass);
  Frontier open_backward(const StagePass& pass);
  Frontier finish_forward(const StagePass& pass, std::int64_t from, Frontier cur);
  Frontier finish_backward(const StagePass& pass, std::int64_t from, Frontier cur);
  void forward_pass(const StagePass& pass);
  void backward_pass(const StagePass& pass);
  void weight_pass(const StagePass& pass);
  bool interleaves(const StagePass& forward, const StagePass& backward) const;
  void forward_backward_pair(const StagePass& f, const StagePass& b);

  const WorkloadSpec& spec_;
  int stage_;
  MicroBatchShape shape_;
  MicroBatchShape head_shape_;  // the output layer's tokens (an inference server: the logit ones)
  OpGraphBuilder graph_;
  StageCompute compute_;
  LayerFigureCache figures_;
  GradientPath gradients_;
  Zero3ParameterGathers zero3_;
  std::unique_ptr<TensorParallelComm> tensor_;
  ContextParallelAttention attention_;
  ExpertPath experts_;
  TransformerLayerEmitter layers_;
  ModelEndsEmitter ends_;
  PipelineTransfers transfers_;

  OpIndex start_gate_ = kNoOp;  // the first parameter gather; the first forward waits for it
  OpIndex pass_end_ = kNoOp;    // the last computation of the pass just generated
};

}  // namespace stepsim::workloads
