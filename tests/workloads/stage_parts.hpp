// Test helper: the emitters of one pipeline stage's step wired together as the step generator
// wires them (stage_pass_walker.cpp), for unit tests of one emitter on its own graph.
#pragma once

#include <memory>
#include <utility>

#include "workloads/context_parallel_attention.hpp"
#include "workloads/expert_path.hpp"
#include "workloads/gradient_path.hpp"
#include "workloads/layer_figures.hpp"
#include "workloads/model_ends_emitter.hpp"
#include "workloads/stage_compute.hpp"
#include "workloads/tensor_parallel_comm.hpp"
#include "workloads/transformer_layer_emitter.hpp"
#include "workloads/zero3_parameter_gathers.hpp"

namespace stepsim::workloads {

// Holds its own copy of the spec: the emitters keep references to it.
struct StageParts {
  explicit StageParts(WorkloadSpec spec_in)
      : spec(std::move(spec_in)),
        shape(micro_batch_shape(spec)),
        compute(spec, graph, false),
        figures(spec, shape),
        gradients(spec, 0, shape.element_bytes, graph, compute),
        zero3(spec, graph),
        tensor(make_tensor_parallel_comm(spec.parallel, graph,
                                         shape.tokens * spec.model.hidden * shape.element_bytes)),
        attention(spec, shape, graph, compute),
        experts(spec, shape, graph, compute, gradients),
        layers(spec, shape,
               {graph, compute, figures, *tensor, attention, experts, gradients, zero3}),
        ends(spec, shape, shape, true, compute, *tensor, gradients, zero3) {}

  WorkloadSpec spec;
  MicroBatchShape shape;
  OpGraphBuilder graph;
  StageCompute compute;
  LayerFigureCache figures;
  GradientPath gradients;
  Zero3ParameterGathers zero3;
  std::unique_ptr<TensorParallelComm> tensor;
  ContextParallelAttention attention;
  ExpertPath experts;
  TransformerLayerEmitter layers;
  ModelEndsEmitter ends;
};

}  // namespace stepsim::workloads
