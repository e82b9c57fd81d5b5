#include "workloads/gradient_path.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

#include "workloads/layer_costs.hpp"
#include "workloads/memory_model.hpp"

namespace stepsim::workloads {

GradientPath::GradientPath(const WorkloadSpec& spec, int stage, std::int64_t precision_bytes,
                           OpGraphBuilder& graph, StageCompute& compute)
    : spec_(spec),
      stage_(stage),
      element_bytes_(precision_bytes),
      graph_(graph),
      compute_(compute),
      buckets_(spec, graph) {}

void GradientPath::begin_backward(const StagePass& pass) {
  buckets_.begin_backward_pass(pass.reduces_gradients);
  deferring_ = pass.defers_weights;
}

OpIndex GradientPath::backward_gemm(const OpLabel& label, ComputeKind kind, const OpCost& forward,
                                    std::initializer_list<OpIndex> deps, double parameters,
                                    bool expert) {
  if (!deferring_) {
    const OpIndex op = compute_.add(label, kind, backward_cost(forward), deps);
    buckets_.add_gradients(op, parameters, expert);
    return op;
  }
  const OpIndex op =
      compute_.add(label, kind, backward_part(forward, kernels::KernelPass::kBackwardInput), deps);
  pending_weights_.push_back({label, kind,
                              backward_part(forward, kernels::KernelPass::kBackwardWeight), op,
                              parameters, expert, true});
  return op;
}

void GradientPath::add_gradients(OpIndex producer, double parameters, bool expert) {
  if (!deferring_) {
    buckets_.add_gradients(producer, parameters, expert);
    return;
  }
  pending_weights_.push_back(
      {{}, ComputeKind::kElementwise, {}, producer, parameters, expert, false});
}

void GradientPath::end_backward(OpIndex last_op) {
  last_backward_op_ = last_op;
  if (deferring_) deferred_weights_.push_back(std::exchange(pending_weights_, {}));
  deferring_ = false;
  buckets_.end_backward_pass();
}

void GradientPath::weight_pass(const StagePass& pass) {
  if (deferred_weights_.empty())
    throw std::logic_error("step generator bug: a weight pass without a deferred backward");
  const std::vector<PendingWeight> pending = std::move(deferred_weights_.front());
  deferred_weights_.pop_front();
  buckets_.begin_backward_pass(pass.reduces_gradients);
  for (const PendingWeight& w : pending) {
    const OpIndex op = w.split ? compute_.add(w.label, w.kind, w.cost, {w.after}) : w.after;
    buckets_.add_gradients(op, w.parameters, w.expert);
  }
  last_backward_op_ = graph_.last_op();
  buckets_.end_backward_pass();
}

void GradientPath::check_weights_done() const {
  if (!deferred_weights_.empty())
    throw std::logic_error("step generator bug: weight gradients never computed");
}

// DualPipe: rank s and rank pp - 1 - s hold copies of the same two stages (rank s's chunk 0 is
// the other's chunk 1), and each copy's gradients cover only the micro-batches that entered at
// its end; the two are summed before the optimizer (deepseek-ai/DualPipe,
// examples/example_dualpipe.py, "Check grads": p0.grad += the mirror's p1.grad and the other way
// round). A 2-rank AllReduce moves each rank's buffer once each way (2 (n - 1) / n = 1), here as
// an exchange with the mirror on the pipeline communicator, after the data-parallel reductions:
// of the shard this rank updates (`parameters`, ZeRO >= 1), or of every gradient (ZeRO 0).
// Returns the receive, which the optimizer waits for.
OpIndex GradientPath::sum_mirrored_gradients(const std::vector<OpIndex>& after, double parameters) {
  const ParallelLayout& layout = spec_.parallel;
  const int offset = layout.pp - 1 - 2 * stage_;
  const std::int64_t bytes =
      std::llround(parameters * static_cast<double>(element_bytes(spec_.training.grad_reduce)));
  // A tag no pass uses: pass tags stay below micro-batches x virtual stages x 2.
  const std::int64_t tag = spec_.micro_batches() * layout.pp * layout.vpp * 2;
  const OpLabel label{OpName::kDpGradients, Phase::kOptimizer, kNoLayer};
  // The reductions run one after another on their stream: the last issued ends last.
  const OpIndex last = *std::max_element(after.begin(), after.end());
  graph_.add_send(label, Communicator::kPipeline, offset, bytes, tag, {last});
  return graph_.add_receive(label, Communicator::kPipeline, offset, bytes, tag, {});
}

void GradientPath::optimizer_step() {
  const ParallelLayout& layout = spec_.parallel;
  graph_.set_pass(kNoMicroBatch, 0);
  buckets_.issue_deferred_reductions(last_backward_op_);
  // Parameters this rank updates: its share of the stage's parameters (ZeRO >= 1 shards the
  // optimizer over the data-parallel group).
  const RankParameters held = rank_parameters(spec_, stage_);
  double dense = held.dense;
  double expert = held.expert;
  if (layout.zero >= 1) {
    dense /= layout.dp * layout.cp;
    expert /= layout.expert_dp();
  }
  std::vector<OpIndex> deps = buckets_.reductions();
  if (deps.empty()) deps.push_back(last_backward_op_);
  if (layout.schedule == PipelineSchedule::kDualPipe)
    deps.push_back(sum_mirrored_gradients(deps, dense + expert));
  const OpLabel label{OpName::kOptimizerStep, Phase::kOptimizer, kNoLayer};
  const OpCost cost = optimizer_step_cost(dense + expert, element_bytes_);
  const OpIndex step = graph_.add_compute(
      label, ComputeKind::kOptimizer, cost.flops, cost.bytes,
      spec_.compute.duration(label.name, label.phase, ComputeKind::kOptimizer, cost), deps);
  if ((layout.zero == 1 || layout.zero == 2) && !spec_.training.overlap_param_gather) {
    // The distributed optimizer gathers the updated parameters bucket by bucket.
    buckets_.gather_parameters_after(step);
  }
}

}  // namespace stepsim::workloads
