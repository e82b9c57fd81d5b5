// "hierarchical": the two-level form for groups that span several scale-up domains of equal
// size m (D domains). AllReduce: reduce-scatter inside every domain, AllReduce of the 1/m shards
// across domains among corresponding members (local index k of every domain), all-gather inside.
// AllGather: across first, then inside; ReduceScatter: inside first, then across. Every phase is a
// fluid ring, so a plan over n ranks has about 3n transfers. Uncontended AllReduce, intra
// bandwidth B_in and step latency a_in, inter B_out and a_out:
//   2[(m-1)/m·S/B_in + (m-1)·a_in] + 2(D-1)/D·(S/m)/B_out + 2(D-1)·a_out.
#include "sim/collectives/algorithm_registry.hpp"
#include "sim/collectives/ring_phases.hpp"
#include "sim/common/input_error.hpp"

namespace stepsim::collectives {
namespace {

class HierarchicalAlgorithm final : public Algorithm {
 public:
  std::string_view name() const override { return "hierarchical"; }

  std::optional<std::string> unsupported(const Operation& op,
                                         const GroupShape& group) const override {
    if (op.kind != OpKind::kAllReduce && op.kind != OpKind::kAllGather &&
        op.kind != OpKind::kReduceScatter)
      return std::string(to_string(op.kind)) + " has no hierarchical form";
    if (group.num_domains() < 2) return "the group lies in one scale-up domain (use 'ring')";
    if (!group.uniform_domain_size())
      return "the group's scale-up domains hold different numbers of members";
    return std::nullopt;
  }

  Plan plan(const Operation& op, const GroupShape& group,
            const PlanOptions& options) const override {
    if (auto why = unsupported(op, group)) throw InputError("hierarchical: " + *why);
    const auto intra = group.domain_members();
    const auto m = static_cast<std::uint32_t>(intra.front().size());
    std::vector<std::vector<std::uint32_t>> inter(m);
    for (std::uint32_t k = 0; k < m; ++k)
      for (const auto& domain : intra)
        inter[k].push_back(domain[k]);
    // A fluid ring reduce-scatter leaves position k owning segment (k + 1) mod m.
    std::vector<Bytes> whole(intra.size(), op.size), shard(m);
    for (std::uint32_t k = 0; k < m; ++k)
      shard[k] = detail::share(op.size, m, (k + 1) % m);
    PlanBuilder builder;
    Frontier frontier(group.size);
    using detail::RingPhase;
    switch (op.kind) {
      case OpKind::kAllReduce:
        detail::emit_ring_fluid(builder, intra, whole, RingPhase::kReduceScatter, options,
                                frontier);
        detail::emit_ring_fluid(builder, inter, shard, RingPhase::kAllReduce, options, frontier);
        detail::emit_ring_fluid(builder, intra, whole, RingPhase::kAllGather, options, frontier);
        break;
      case OpKind::kAllGather:
        detail::emit_ring_fluid(builder, inter, shard, RingPhase::kAllGather, options, frontier);
        detail::emit_ring_fluid(builder, intra, whole, RingPhase::kAllGather, options, frontier);
        break;
      default:  // ReduceScatter
        detail::emit_ring_fluid(builder, intra, whole, RingPhase::kReduceScatter, options,
                                frontier);
        detail::emit_ring_fluid(builder, inter, shard, RingPhase::kReduceScatter, options,
                                frontier);
        break;
    }
    return std::move(builder).finish(member_reduction(op.kind));
  }
};

}  // namespace

void register_hierarchical_algorithm(AlgorithmRegistry& registry) {
  registry.add(
      "hierarchical",
      "reduce-scatter inside each scale-up domain, the operation across, all-gather inside",
      [](const AlgorithmRegistry&) { return std::make_unique<HierarchicalAlgorithm>(); });
}

}  // namespace stepsim::collectives
