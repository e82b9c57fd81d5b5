#include "workloads/stage_compute.hpp"

#include <cmath>

namespace stepsim::workloads {

StageCompute::StageCompute(const WorkloadSpec& spec, OpGraphBuilder& graph, bool roofline)
    : spec_(spec), graph_(graph), roofline_(roofline) {}

OpIndex StageCompute::add(const OpLabel& label, ComputeKind kind, const OpCost& cost,
                          std::initializer_list<OpIndex> deps) {
  // A serving step keeps the roofline (its attention reads the KV cache; serving_spec.hpp).
  Time duration =
      roofline_ ? spec_.compute.duration(label.name, label.phase, kind, cost.flops, cost.bytes)
                : spec_.compute.duration(label.name, label.phase, kind, cost);
  if (beside_all_to_all_ && (kind == ComputeKind::kGemm || kind == ComputeKind::kGroupedGemm ||
                             kind == ComputeKind::kAttention)) {
    duration = Time::ps(std::llround(static_cast<double>(duration.picoseconds()) /
                                     (1.0 - spec_.parallel.dualpipe_comm_sm_share)));
  }
  return graph_.add_compute(label, kind, cost.flops, cost.bytes, duration, deps);
}

}  // namespace stepsim::workloads
