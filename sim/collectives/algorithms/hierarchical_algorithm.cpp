// The two-level forms for groups that span several scale-up domains of equal size m (D domains).
// AllReduce: reduce-scatter inside every domain, AllReduce of the 1/m shards across domains among
// corresponding members (local index k of every domain), all-gather inside. AllGather: across
// first, then inside; ReduceScatter: inside first, then across. Every phase is a fluid ring.
//
// "hierarchical" runs the phases one after the other (Horovod's hierarchical AllReduce): a plan
// over n ranks has about 3n transfers. Uncontended AllReduce, intra bandwidth B_in and step
// latency a_in, inter B_out and a_out:
//   2[(m-1)/m·S/B_in + (m-1)·a_in] + 2(D-1)/D·(S/m)/B_out + 2(D-1)·a_out.
//
// "hierarchical-pipelined" cuts the data into P chunks (chunk_count of the 1/m shard, so P = 1,
// the form above, up to chunk_size per shard) and lets the phases overlap, as NCCL's chunked
// tree and NVLS-tree pipelines do: the first chunk runs the phases in order (the pipeline's
// fill, with every latency), and the other P-1 chunks run as one fluid "bulk" per phase that
// starts as soon as the first chunk has cleared the phase before. Intra-domain and inter-domain
// links then work at the same time, and the time tends to the fill plus the busiest link's
// work instead of the sum of the phases (about 6n transfers). Uncontended AllReduce with zero
// latencies (tests/collectives/closed_form_test.cpp), X = (m-1)/m·S, Y = 2(D-1)/D·(S/m):
//   inter-bound: 2X/(P·B_in) + Y/B_out  (the first chunk's reduce-scatter shares the intra links
//                with the bulk's, then the inter links never idle);
//   intra-bound: 2X/B_in  (the intra links never idle).
// The bulk all-gather waits for the first chunk only, so when the inter phase is the bottleneck
// the last chunk's all-gather (1/P of it) is not charged after it: the error of a fine pipeline.
#include "sim/collectives/algorithms/algorithm_registry.hpp"
#include "sim/collectives/algorithms/ring_phases.hpp"
#include "sim/common/input_error.hpp"

namespace stepsim::collectives {
namespace {

using detail::RingPhase;
using Rings = std::vector<std::vector<std::uint32_t>>;

// The phases of an operation over `intra` rings (one per domain) and `inter` rings (one per local
// index), in order.
struct Phase {
  bool inside;  // over the intra rings (whole buffer) or the inter rings (1/m shards)
  RingPhase ring_phase;
};

std::vector<Phase> phases_of(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return {{true, RingPhase::kReduceScatter},
              {false, RingPhase::kAllReduce},
              {true, RingPhase::kAllGather}};
    case CollectiveKind::kAllGather:
      return {{false, RingPhase::kAllGather}, {true, RingPhase::kAllGather}};
    default:  // ReduceScatter
      return {{true, RingPhase::kReduceScatter}, {false, RingPhase::kReduceScatter}};
  }
}

class HierarchicalAlgorithm final : public Algorithm {
 public:
  explicit HierarchicalAlgorithm(bool pipelined) : pipelined_(pipelined) {}

  std::string_view name() const override {
    return pipelined_ ? "hierarchical-pipelined" : "hierarchical";
  }

  std::optional<std::string> unsupported(const Operation& op,
                                         const GroupShape& group) const override {
    if (op.kind != CollectiveKind::kAllReduce && op.kind != CollectiveKind::kAllGather &&
        op.kind != CollectiveKind::kReduceScatter)
      return std::string(to_string(op.kind)) + " has no hierarchical form";
    if (group.num_domains() < 2) return "the group lies in one scale-up domain (use 'ring')";
    if (!group.uniform_domain_size())
      return "the group's scale-up domains hold different numbers of members";
    return std::nullopt;
  }

  Plan plan(const Operation& op, const GroupShape& group,
            const PlanOptions& options) const override {
    if (auto why = unsupported(op, group)) throw InputError(std::string(name()) + ": " + *why);
    const Rings intra = group.domain_members();
    const auto m = static_cast<std::uint32_t>(intra.front().size());
    Rings inter(m);
    for (std::uint32_t k = 0; k < m; ++k)
      for (const auto& domain : intra)
        inter[k].push_back(domain[k]);
    const std::vector<Phase> phases = phases_of(op.kind);
    const std::uint32_t chunks =
        pipelined_ ? detail::chunk_count(Bytes(op.size.count() / m), options) : 1;
    const Bytes first = detail::share(op.size, chunks, 0);
    PlanBuilder builder;
    // The first chunk (the whole operation when chunks = 1), phase after phase; `cleared[p]` is
    // where each member stands once the first chunk has cleared phase p.
    Frontier frontier(group.size);
    std::vector<Frontier> cleared;
    for (const Phase& phase : phases) {
      emit(builder, phase, intra, inter, first, options, frontier);
      cleared.push_back(frontier);
    }
    if (chunks > 1) {
      // The bulk of phase p starts where the first chunk cleared phase p-1 (phase 0: at the start).
      const Bytes bulk = op.size - first;
      for (std::size_t p = 0; p < phases.size(); ++p) {
        Frontier start = p == 0 ? Frontier(group.size) : cleared[p - 1];
        emit(builder, phases[p], intra, inter, bulk, options, start);
      }
    }
    return std::move(builder).finish(member_reduction(op.kind));
  }

 private:
  // One phase over `bytes` of the operation's buffer: intra rings carry the whole of it, inter
  // ring k the 1/m shard that a fluid ring reduce-scatter leaves at local position k, (k+1) mod m.
  static void emit(PlanBuilder& builder, const Phase& phase, const Rings& intra, const Rings& inter,
                   Bytes bytes, const PlanOptions& options, Frontier& frontier) {
    std::vector<Bytes> sizes;
    if (phase.inside) {
      sizes.assign(intra.size(), bytes);
      detail::emit_ring_fluid(builder, intra, sizes, phase.ring_phase, options, frontier);
    } else {
      const auto m = static_cast<std::uint32_t>(inter.size());
      for (std::uint32_t k = 0; k < m; ++k)
        sizes.push_back(detail::share(bytes, m, (k + 1) % m));
      // Every step of these rings crosses the network: its step latency is the network's.
      PlanOptions across = options;
      across.step_latency = options.net_step_latency.value_or(options.step_latency);
      detail::emit_ring_fluid(builder, inter, sizes, phase.ring_phase, across, frontier);
    }
  }

  bool pipelined_;
};

}  // namespace

void register_hierarchical_algorithm(AlgorithmRegistry& registry) {
  registry.add(
      "hierarchical",
      "reduce-scatter inside each scale-up domain, the operation across, all-gather inside",
      [](const AlgorithmRegistry&) { return std::make_unique<HierarchicalAlgorithm>(false); });
  registry.add(
      "hierarchical-pipelined",
      "hierarchical, cut into chunks so that the phases inside and across domains overlap",
      [](const AlgorithmRegistry&) { return std::make_unique<HierarchicalAlgorithm>(true); });
}

}  // namespace stepsim::collectives
