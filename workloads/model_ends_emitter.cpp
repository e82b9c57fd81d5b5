#include "workloads/model_ends_emitter.hpp"

#include "workloads/layer_parameters.hpp"

namespace stepsim::workloads {

ModelEndsEmitter::ModelEndsEmitter(const WorkloadSpec& spec, const MicroBatchShape& shape,
                                   const MicroBatchShape& head_shape, bool loss,
                                   StageCompute& compute, TensorParallelComm& tensor,
                                   GradientPath& gradients, Zero3ParameterGathers& zero3)
    : model_(spec.model),
      tp_(spec.parallel.tp),
      virtual_stages_(spec.parallel.pp * spec.parallel.vpp),
      final_norm_parameters_(count_parameters(spec.model).final_norm),
      shape_(shape),
      head_shape_(head_shape),
      loss_(loss),
      compute_(compute),
      tensor_(tensor),
      gradients_(gradients),
      zero3_(zero3) {}

double ModelEndsEmitter::output_parameters() const {
  return output_parameters_per_rank(model_, tp_, virtual_stages_);
}

Frontier ModelEndsEmitter::embedding_forward() {
  const ParameterGathers gathers = zero3_.gather(
      Phase::kForward, kNoLayer, embedding_parameters_per_rank(model_, tp_), 0, kNoOp);
  const OpIndex lookup =
      compute_.add({OpName::kEmbedding, Phase::kForward, kNoLayer}, ComputeKind::kElementwise,
                   embedding_forward_cost(model_, shape_), {gathers.dense});
  return {tensor_.reduce(Phase::kForward, kNoLayer, lookup), kNoOp};
}

void ModelEndsEmitter::embedding_backward(Frontier in) {
  const double params = embedding_parameters_per_rank(model_, tp_);
  const ParameterGathers gathers = zero3_.gather(Phase::kBackward, kNoLayer, params, 0, in.main);
  const OpIndex gathered = tensor_.gather(Phase::kBackward, kNoLayer, in.main);
  const OpIndex lookup = compute_.add(
      {OpName::kEmbedding, Phase::kBackward, kNoLayer}, ComputeKind::kElementwise,
      backward_cost(embedding_forward_cost(model_, shape_)), {gathered, in.side, gathers.dense});
  gradients_.add_gradients(lookup, params, false);
}

void ModelEndsEmitter::head_forward(Frontier in) {
  const Phase fwd = Phase::kForward;
  const ParameterGathers gathers =
      zero3_.gather(fwd, kNoLayer, output_parameters() + final_norm_parameters_, 0, kNoOp);
  const HeadCosts cost = head_forward_costs(model_, head_shape_);
  const OpIndex norm = compute_.add({OpName::kNorm, fwd, kNoLayer}, ComputeKind::kElementwise,
                                    cost.final_norm, {in.main, in.side});
  const OpIndex gathered = tensor_.gather(fwd, kNoLayer, norm);
  const OpIndex logits = compute_.add({OpName::kLogits, fwd, kNoLayer}, ComputeKind::kGemm,
                                      cost.logits, {gathered, gathers.dense});
  if (loss_)
    compute_.add({OpName::kLoss, fwd, kNoLayer}, ComputeKind::kElementwise, cost.loss, {logits});
}

Frontier ModelEndsEmitter::head_backward() {
  const Phase bwd = Phase::kBackward;
  const ParameterGathers gathers =
      zero3_.gather(bwd, kNoLayer, output_parameters() + final_norm_parameters_, 0, kNoOp);
  const HeadCosts cost = head_forward_costs(model_, shape_);
  const OpIndex loss =
      compute_.add({OpName::kLoss, bwd, kNoLayer}, ComputeKind::kElementwise, cost.loss, {});
  const OpIndex logits =
      gradients_.backward_gemm({OpName::kLogits, bwd, kNoLayer}, ComputeKind::kGemm, cost.logits,
                               {loss, gathers.dense}, output_parameters(), false);
  // The backward of the column-parallel output layer's input: AllReduce (ReduceScatter with SP).
  const OpIndex reduced = tensor_.reduce(bwd, kNoLayer, logits);
  const OpIndex norm = compute_.add({OpName::kNorm, bwd, kNoLayer}, ComputeKind::kElementwise,
                                    backward_cost(cost.final_norm), {reduced});
  gradients_.add_gradients(norm, final_norm_parameters_, false);
  return {norm, kNoOp};
}

}  // namespace stepsim::workloads
