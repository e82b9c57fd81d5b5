// The operations of a generated step outside the transformer layers: the input embedding on the
// first virtual stage and the output layer (final norm, logits, loss) on the last, forward and
// backward, for one micro-batch. The embedding is vocabulary-parallel: each tensor-parallel rank
// looks up its rows and the sum goes through an AllReduce (ReduceScatter with sequence
// parallelism) of b x s' x h elements; the column-parallel output layer gathers its input with
// sequence parallelism and reduces its input gradient the same way. Their parameters are
// gathered under ZeRO-3 and their gradients go into the gradient path.
#pragma once

#include "workloads/frontier.hpp"
#include "workloads/gradient_path.hpp"
#include "workloads/layer_costs.hpp"
#include "workloads/stage_compute.hpp"
#include "workloads/tensor_parallel_comm.hpp"
#include "workloads/zero3_parameter_gathers.hpp"

namespace stepsim::workloads {

class ModelEndsEmitter {
 public:
  // `shape`: the micro-batch; `head_shape`: the tokens the output layer's forward projects (an
  // inference server: the last token of each sequence). `loss`: whether the forward ends with
  // the loss (not in an inference server's pass). Every reference must outlive the emitter.
  ModelEndsEmitter(const WorkloadSpec& spec, const MicroBatchShape& shape,
                   const MicroBatchShape& head_shape, bool loss, StageCompute& compute,
                   TensorParallelComm& tensor, GradientPath& gradients,
                   Zero3ParameterGathers& zero3);

  // The embedding's forward; returns what the first layer waits for.
  Frontier embedding_forward();
  // The embedding's backward after the gradient `in` of the first layer's input.
  void embedding_backward(Frontier in);
  // The output layer's forward after the last layer's `in`.
  void head_forward(Frontier in);
  // The loss's and the output layer's backward; returns the gradient of the last layer's output.
  Frontier head_backward();

 private:
  double output_parameters() const;

  const ModelSpec& model_;
  int tp_ = 1;
  int virtual_stages_ = 1;
  double final_norm_parameters_ = 0;
  MicroBatchShape shape_;
  MicroBatchShape head_shape_;
  bool loss_ = true;
  StageCompute& compute_;
  TensorParallelComm& tensor_;
  GradientPath& gradients_;
  Zero3ParameterGathers& zero3_;
};

}  // namespace stepsim::workloads
