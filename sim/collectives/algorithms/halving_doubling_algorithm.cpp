// "halving-doubling": recursive halving for the reduce-scatter and recursive doubling for the
// all-gather (Rabenseifner; Thakur, Rabenseifner & Gropp 2005). AllReduce on any n: with
// p = 2^floor(log2 n) and r = n - p, the first 2r ranks pair up before (odd ranks hand their whole
// buffer to the even neighbour) and after (the even neighbour hands the result back), so p ranks
// run the power-of-two core. ReduceScatter and AllGather need n to be a power of two.
// Uncontended, per-rank bandwidth B, per-step latency a, n = p = 2^k:
//   AllReduce 2k·a + 2(n-1)/n·S/B;  ReduceScatter, AllGather k·a + (n-1)/n·S/B;
//   non-power-of-two AllReduce adds 2·(a + S/B).
#include <bit>

#include "sim/collectives/algorithms/algorithm_registry.hpp"
#include "sim/collectives/algorithms/ring_phases.hpp"
#include "sim/common/input_error.hpp"

namespace stepsim::collectives {
namespace {

class HalvingDoublingAlgorithm final : public Algorithm {
 public:
  std::string_view name() const override { return "halving-doubling"; }

  std::optional<std::string> unsupported(const Operation& op,
                                         const GroupShape& group) const override {
    if (op.kind == CollectiveKind::kAllReduce) return std::nullopt;
    if (op.kind == CollectiveKind::kAllGather || op.kind == CollectiveKind::kReduceScatter) {
      if (std::has_single_bit(group.size)) return std::nullopt;
      return std::string(to_string(op.kind)) + " by halving-doubling needs a power-of-two group (" +
             std::to_string(group.size) + " ranks)";
    }
    return std::string(to_string(op.kind)) + " is not a halving-doubling operation";
  }

  Plan plan(const Operation& op, const GroupShape& group,
            const PlanOptions& options) const override {
    if (auto why = unsupported(op, group)) throw InputError("halving-doubling: " + *why);
    const std::uint32_t n = group.size;
    PlanBuilder builder;
    Frontier frontier(n);
    if (n < 2) return std::move(builder).finish(member_reduction(op.kind));
    const std::uint32_t p = std::bit_floor(n);
    const std::uint32_t r = n - p;
    const auto k = static_cast<std::uint32_t>(std::countr_zero(p));
    // Active rank j of the power-of-two core.
    auto active = [&](std::uint32_t j) { return j < r ? 2 * j : j + r; };
    const Bytes S = op.size;

    if (r > 0) {  // pre-step: odd ranks among the first 2r hand their buffer over
      for (std::uint32_t i = 1; i < 2 * r; i += 2) {
        const TransferId t =
            builder.add({Endpoint::member(i), Endpoint::member(i - 1), S,
                         detail::start_latency(frontier, i, options.step_latency, options), 1},
                        frontier.deps(i));
        std::vector<TransferId> ids{t};
        for (TransferId ready : frontier.deps(i - 1))
          ids.push_back(ready);
        frontier.set_all(builder, i - 1, ids);
      }
    }
    auto exchange_step = [&](std::uint32_t distance, Bytes bytes) {
      std::vector<TransferId> received(p);
      for (std::uint32_t j = 0; j < p; ++j) {
        // An exchange is a rendezvous: it starts when both partners have reached the step (a
        // core rank must not receive while it is still taking a helper's buffer).
        const std::uint32_t from = active(j), to = active(j ^ distance);
        std::vector<TransferId> deps(frontier.deps(from).begin(), frontier.deps(from).end());
        for (TransferId ready : frontier.deps(to))
          deps.push_back(ready);
        const Time extra =
            deps.empty() ? options.step_latency + options.op_latency : options.step_latency;
        received[j ^ distance] =
            builder.add({Endpoint::member(from), Endpoint::member(to), bytes, extra, 1}, deps);
      }
      for (std::uint32_t j = 0; j < p; ++j)
        frontier.set(active(j), received[j]);
    };
    const bool reduce = op.kind != CollectiveKind::kAllGather;
    const bool gather = op.kind != CollectiveKind::kReduceScatter;
    if (reduce)  // recursive halving: distances p/2 ... 1, halves S/2 ... S/p
      for (std::uint32_t j = 0; j < k; ++j)
        exchange_step(p >> (j + 1), Bytes(S.count() >> (j + 1)));
    if (gather)  // recursive doubling: distances 1 ... p/2, pieces S/p ... S/2
      for (std::uint32_t j = 0; j < k; ++j)
        exchange_step(1u << j, Bytes(S.count() >> (k - j)));
    if (r > 0) {  // post-step: the even ranks hand the result back
      for (std::uint32_t i = 0; i < 2 * r; i += 2) {
        const TransferId t =
            builder.add({Endpoint::member(i), Endpoint::member(i + 1), S, options.step_latency, 1},
                        frontier.deps(i));
        frontier.set(i + 1, t);
      }
    }
    return std::move(builder).finish(member_reduction(op.kind));
  }
};

}  // namespace

void register_halving_doubling_algorithm(AlgorithmRegistry& registry) {
  registry.add(
      "halving-doubling", "recursive halving (reduce-scatter) and doubling (all-gather)",
      [](const AlgorithmRegistry&) { return std::make_unique<HalvingDoublingAlgorithm>(); });
}

}  // namespace stepsim::collectives
