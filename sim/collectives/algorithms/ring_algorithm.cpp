// Ring algorithms: "ring" (step by step, chunked, NCCL-style pipelining), "ring-fluid" (one
// transfer per ring edge for the whole operation) and "ring-pipelined" (the fluid edges plus one
// chunk carried round the ring step by step: ring_phases.hpp). All run AllReduce (reduce-scatter
// then all-gather), AllGather and ReduceScatter on rings, and Broadcast and Reduce on pipelined
// chains that follow the same ring orders from the root (the pipelined form: fluid chains).
// Uncontended, with per-member bandwidth B and per-step latency a (software step latency + route
// latency), an AllReduce of S bytes on n ranks takes 2(n-1)·a + 2(n-1)/n·S/B in the step and fluid
// forms (docs/design.md, "Reference formulas").
#include <algorithm>

#include "sim/collectives/algorithms/algorithm_registry.hpp"
#include "sim/collectives/algorithms/ring_phases.hpp"
#include "sim/common/input_error.hpp"

namespace stepsim::collectives {
namespace {

class RingAlgorithm final : public Algorithm {
 public:
  enum class Form : std::uint8_t { kSteps, kFluid, kPipelined };
  explicit RingAlgorithm(Form form) : form_(form), fluid_(form != Form::kSteps) {}
  std::string_view name() const override {
    return form_ == Form::kSteps ? "ring" : form_ == Form::kFluid ? "ring-fluid" : "ring-pipelined";
  }

  std::optional<std::string> unsupported(const Operation& op, const GroupShape&) const override {
    switch (op.kind) {
      case CollectiveKind::kAllReduce:
      case CollectiveKind::kAllGather:
      case CollectiveKind::kReduceScatter:
      case CollectiveKind::kBroadcast:
      case CollectiveKind::kReduce:
        return std::nullopt;
      default:
        return std::string(to_string(op.kind)) + " is not a ring operation (use 'direct')";
    }
  }

  Plan plan(const Operation& op, const GroupShape& group,
            const PlanOptions& options) const override {
    if (auto why = unsupported(op, group)) throw InputError(std::string(name()) + ": " + *why);
    const std::uint32_t channels = detail::channel_count(group, options);
    auto rings = detail::channel_rings(group, channels);
    std::vector<Bytes> bytes(channels);
    for (std::uint32_t c = 0; c < channels; ++c)
      bytes[c] = detail::share(op.size, channels, c);
    PlanBuilder builder;
    Frontier frontier(group.size);
    if (op.kind == CollectiveKind::kBroadcast || op.kind == CollectiveKind::kReduce) {
      for (auto& ring : rings)  // each chain starts at the root
        std::rotate(ring.begin(), std::find(ring.begin(), ring.end(), op.root), ring.end());
      const bool toward_root = op.kind == CollectiveKind::kReduce;
      if (fluid_)
        detail::emit_chain_fluid(builder, rings, bytes, toward_root, options, frontier, &group);
      else
        detail::emit_chain_steps(builder, rings, bytes, toward_root, options, frontier, &group);
      return std::move(builder).finish(member_reduction(op.kind));
    }
    const auto phase = op.kind == CollectiveKind::kAllReduce   ? detail::RingPhase::kAllReduce
                       : op.kind == CollectiveKind::kAllGather ? detail::RingPhase::kAllGather
                                                               : detail::RingPhase::kReduceScatter;
    if (form_ == Form::kPipelined)
      detail::emit_ring_pipelined(builder, rings, bytes, phase, options, frontier, &group);
    else if (fluid_)
      detail::emit_ring_fluid(builder, rings, bytes, phase, options, frontier, &group);
    else
      detail::emit_ring_steps(builder, rings, bytes, phase, options, frontier, &group);
    return std::move(builder).finish(member_reduction(op.kind));
  }

 private:
  Form form_;
  bool fluid_;
};

}  // namespace

void register_ring_algorithms(AlgorithmRegistry& registry) {
  registry.add("ring", "ring, step by step: each step its own transfers, chunked and pipelined",
               [](const AlgorithmRegistry&) {
                 return std::make_unique<RingAlgorithm>(RingAlgorithm::Form::kSteps);
               });
  registry.add("ring-fluid", "ring, fluid: one transfer per ring edge for the whole operation",
               [](const AlgorithmRegistry&) {
                 return std::make_unique<RingAlgorithm>(RingAlgorithm::Form::kFluid);
               });
  registry.add("ring-pipelined",
               "ring, pipelined fluid: one transfer per ring edge, and one chunk carried round "
               "the ring step by step at each edge's own latency (Broadcast/Reduce: fluid chains)",
               [](const AlgorithmRegistry&) {
                 return std::make_unique<RingAlgorithm>(RingAlgorithm::Form::kPipelined);
               });
}

}  // namespace stepsim::collectives
