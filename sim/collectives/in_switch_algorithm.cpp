// "in-switch": reduction in the network (NVLink SHARP "NVLS", InfiniBand SHARP). Every member
// streams its data to the group's reduction switch and receives the reduced result, as NCCL's
// NVLS AllReduce does: a reduce-scatter through the switch (each member sends all S bytes, the
// switch returns the member's reduced S/n) and a multicast all-gather (each member sends its S/n,
// the switch delivers all S to everyone). Per member: S + S/n up and S/n + S down, streamed
// concurrently (the switch pipelines). Uncontended: a + (1 + 1/n)·S/B, busbw =
// 2(n-1)/(n+1)·B — it grows with n, as the NVLS ramp of the published H200 figures does
// (../shared/data/nccl_busbw.yaml, nvls_ramp).
#include "sim/collectives/algorithm_registry.hpp"
#include "sim/collectives/ring_phases.hpp"
#include "sim/common/input_error.hpp"

namespace stepsim::collectives {
namespace {

class InSwitchAlgorithm final : public Algorithm {
 public:
  std::string_view name() const override { return "in-switch"; }

  std::optional<std::string> unsupported(const Operation& op,
                                         const GroupShape& group) const override {
    if (op.kind != CollectiveKind::kAllReduce && op.kind != CollectiveKind::kAllGather &&
        op.kind != CollectiveKind::kReduceScatter)
      return std::string(to_string(op.kind)) + " has no in-switch form";
    if (!group.in_switch_reduction)
      return "no switch that reduces in the network (NVLS/SHARP) spans the whole group";
    return std::nullopt;
  }

  Plan plan(const Operation& op, const GroupShape& group,
            const PlanOptions& options) const override {
    if (auto why = unsupported(op, group)) throw InputError("in-switch: " + *why);
    const std::uint32_t n = group.size;
    PlanBuilder builder;
    const Time start = options.step_latency + options.op_latency;
    for (std::uint32_t i = 0; i < n; ++i) {
      const Bytes own = detail::share(op.size, n, i);
      Bytes up, down;
      switch (op.kind) {
        case CollectiveKind::kAllReduce:
          up = op.size + own;
          down = own + op.size;
          break;
        case CollectiveKind::kReduceScatter:
          up = op.size;
          down = own;
          break;
        default:  // AllGather
          up = own;
          down = op.size;
          break;
      }
      builder.add({Endpoint::member(i), Endpoint::reduction_switch(), up, start, 1});
      // The result comes back over the way up and the way down: two route latencies.
      builder.add({Endpoint::reduction_switch(), Endpoint::member(i), down, start, 2});
    }
    return std::move(builder).finish(Reduction::kNone);  // the switch reduces
  }
};

}  // namespace

void register_in_switch_algorithm(AlgorithmRegistry& registry) {
  registry.add("in-switch", "reduction in the switch (NVLS, SHARP) where the switch supports it",
               [](const AlgorithmRegistry&) { return std::make_unique<InSwitchAlgorithm>(); });
}

}  // namespace stepsim::collectives
