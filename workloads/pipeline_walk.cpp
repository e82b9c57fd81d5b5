#include "workloads/pipeline_walk.hpp"

#include "workloads/pipeline_schedule.hpp"

namespace stepsim::workloads {

std::int64_t StagePass::tag(int boundary) const {
  // Boundary b lies between virtual stages b and b + 1.
  return ((static_cast<std::int64_t>(micro_batch) * (virtual_stages - 1) + boundary) * 2) +
         (forward ? 0 : 1);
}

std::int64_t StagePass::receive_tag() const {
  return tag(forward ? virtual_stage - 1 : virtual_stage);
}

std::int64_t StagePass::send_tag() const {
  return tag(forward ? virtual_stage : virtual_stage - 1);
}

std::vector<StagePass> pipeline_walk(const WorkloadSpec& spec, int stage) {
  const ParallelLayout& layout = spec.parallel;
  const int virtual_stages = virtual_stage_count(layout);
  const std::vector<std::int64_t> layers =
      layers_per_virtual_stage(spec.model.layers, virtual_stages);
  std::vector<std::int64_t> first_layer(layers.size() + 1, 0);
  for (std::size_t i = 0; i < layers.size(); ++i)
    first_layer[i + 1] = first_layer[i] + layers[i];

  const auto steps =
      pipeline_order(layout.schedule, layout.pp, stage, layout.vpp, spec.micro_batches());
  std::vector<StagePass> passes;
  passes.reserve(steps.size());
  const auto chunks = static_cast<std::size_t>(chunks_per_rank(layout));
  std::vector<std::size_t> last_gradients(chunks, steps.size());
  for (const PipelineStep& step : steps) {
    StagePass pass;
    pass.forward = step.forward;
    pass.micro_batch = step.micro_batch;
    pass.chunk = step.chunk;
    pass.virtual_stage = virtual_stage_of(layout, stage, step.chunk);
    pass.virtual_stages = virtual_stages;
    pass.layer_begin = first_layer[static_cast<std::size_t>(pass.virtual_stage)];
    pass.layer_end = first_layer[static_cast<std::size_t>(pass.virtual_stage) + 1];
    pass.defers_weights = step.defers_weights;
    pass.weights_only = step.weights_only;
    pass.overlapped = step.overlapped;
    pass.send_after_next = step.send_after_next;
    pass.downstream = downstream_offset(layout, step.chunk);
    if (!step.forward && !step.defers_weights)
      last_gradients[static_cast<std::size_t>(step.chunk)] = passes.size();
    passes.push_back(pass);
  }
  for (const std::size_t last : last_gradients)
    if (last < passes.size()) passes[last].reduces_gradients = true;
  return passes;
}

}  // namespace stepsim::workloads
