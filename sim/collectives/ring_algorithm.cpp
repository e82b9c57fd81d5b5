// Ring algorithms: "ring" (step by step, chunked, NCCL-style pipelining) and "ring-fluid" (one
// transfer per ring edge for the whole operation). Both run AllReduce (reduce-scatter then
// all-gather), AllGather and ReduceScatter on rings, and Broadcast and Reduce on pipelined chains
// that follow the same ring orders from the root. Uncontended, with per-member bandwidth B and
// per-step latency a (software step latency + route latency), an AllReduce of S bytes on n ranks
// takes 2(n-1)·a + 2(n-1)/n·S/B in both forms (docs/design.md, "Reference formulas").
#include <algorithm>

#include "sim/collectives/algorithm_registry.hpp"
#include "sim/collectives/ring_phases.hpp"
#include "sim/common/input_error.hpp"

namespace stepsim::collectives {
namespace {

class RingAlgorithm final : public Algorithm {
 public:
  explicit RingAlgorithm(bool fluid) : fluid_(fluid) {}
  std::string_view name() const override { return fluid_ ? "ring-fluid" : "ring"; }

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
    if (fluid_)
      detail::emit_ring_fluid(builder, rings, bytes, phase, options, frontier, &group);
    else
      detail::emit_ring_steps(builder, rings, bytes, phase, options, frontier, &group);
    return std::move(builder).finish(member_reduction(op.kind));
  }

 private:
  bool fluid_;
};

}  // namespace

void register_ring_algorithms(AlgorithmRegistry& registry) {
  registry.add("ring", "ring, step by step: each step its own transfers, chunked and pipelined",
               [](const AlgorithmRegistry&) { return std::make_unique<RingAlgorithm>(false); });
  registry.add("ring-fluid", "ring, fluid: one transfer per ring edge for the whole operation",
               [](const AlgorithmRegistry&) { return std::make_unique<RingAlgorithm>(true); });
}

}  // namespace stepsim::collectives
