// The operations of one transformer layer of a generated step, forward and backward, for one
// micro-batch of a pass (pipeline_walk.hpp): the norms, the attention block (QKV, the core with
// its context-parallel communication, the output projection), the dense MLP or the MoE path
// (expert_path.hpp), with the tensor-parallel collectives of the chosen emitter
// (tensor_parallel_comm.hpp), the layer's ZeRO-3 gathers, its recomputation
// (training.recompute) and its gradients into the gradient path. Each operation is labelled with
// its pass's micro-batch and chunk.
//
// The forward comes in two pieces and the backward in three, which DualPipe's overlapped
// forward-and-backward chunks interleave (figure 4 of the DeepSeek-V3 report): forward, the
// attention block up to the MLP's norm (with an MoE layer's router and dispatch), then the MLP;
// backward, its start (the recomputed forward, an MoE layer's combine), the MLP, then the
// attention block.
#pragma once

#include <cstdint>

#include "workloads/context_parallel_attention.hpp"
#include "workloads/expert_path.hpp"
#include "workloads/frontier.hpp"
#include "workloads/gradient_path.hpp"
#include "workloads/layer_figures.hpp"
#include "workloads/pipeline_walk.hpp"
#include "workloads/stage_compute.hpp"
#include "workloads/tensor_parallel_comm.hpp"
#include "workloads/zero3_parameter_gathers.hpp"

namespace stepsim::workloads {

// The pieces of the step generator a layer's operations come from; each must outlive the
// emitter.
struct LayerEmitterParts {
  OpGraphBuilder& graph;
  StageCompute& compute;
  LayerFigureCache& figures;
  TensorParallelComm& tensor;
  ContextParallelAttention& attention;
  ExpertPath& experts;
  GradientPath& gradients;
  Zero3ParameterGathers& zero3;
};

class TransformerLayerEmitter {
 public:
  // `spec` must outlive the emitter.
  TransformerLayerEmitter(const WorkloadSpec& spec, const MicroBatchShape& shape,
                          const LayerEmitterParts& parts);

  // The forward after the attention block, before the MLP.
  struct ForwardState {
    const StagePass* pass = nullptr;
    std::int64_t layer = 0;
    Phase phase = Phase::kForward;
    OpIndex mlp_norm = kNoOp;
    OpIndex dispatch = kNoOp;
  };
  // The backward between its pieces.
  struct BackwardState {
    const StagePass* pass = nullptr;
    std::int64_t layer = 0;
    Frontier in;          // the incoming gradient
    Frontier recomputed;  // the recomputed forward (or `in`)
    ParameterGathers gathers;
    OpIndex combine = kNoOp;
    Frontier experts;  // MoE: {dispatch's backward, shared experts' backward}
    OpIndex mlp_norm = kNoOp;
  };

  // The forward (or, with Phase::kRecompute, the recomputed forward) of `layer` in `pass` after
  // `in`; returns what the next layer waits for. `pass` must outlive the states returned.
  Frontier forward(const StagePass& pass, std::int64_t layer, Phase phase, Frontier in);
  ForwardState forward_attention(const StagePass& pass, std::int64_t layer, Phase phase,
                                 Frontier in);
  Frontier forward_mlp(const ForwardState& state);

  // The backward of `layer` in `pass` from the incoming gradient `in`; returns the gradient of
  // its input.
  Frontier backward(const StagePass& pass, std::int64_t layer, Frontier in);
  BackwardState backward_begin(const StagePass& pass, std::int64_t layer, Frontier in);
  void backward_mlp(BackwardState& state);
  Frontier backward_attention(BackwardState& state);

 private:
  Frontier recompute(std::int64_t layer, const StagePass& pass, Frontier in,
                     const ParameterGathers& gathers);
  OpIndex dense_mlp_backward(const BackwardState& state, const LayerFigures& f);
  Frontier attention_backward(std::int64_t layer, const LayerFigures& f, OpIndex mlp_norm);
  void label(const StagePass& pass) { parts_.graph.set_pass(pass.micro_batch, pass.chunk); }

  const WorkloadSpec& spec_;
  const ModelSpec& model_;
  MicroBatchShape shape_;
  LayerEmitterParts parts_;
};

}  // namespace stepsim::workloads
