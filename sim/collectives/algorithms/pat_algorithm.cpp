// "pat": NCCL's PAT (Parallel Aggregated Trees, NCCL 2.23+) AllGather and ReduceScatter, which
// NCCL runs with one GPU per node only (tuning.cc ncclPatEnable: nNodes == nRanks). Every rank's
// block reaches the others along a binomial tree, and the n trees are aggregated: at each of
// ceil(log2 n) steps a rank sends, in one message, every block it forwards at that distance.
// AllGather, n ranks, K = ceil(log2 n), distances d = 1, 2, 4, ...: after step k a rank r holds
// the blocks r, r+1, ..., r+min(2^(k+1), n)-1 (mod n); at step k it sends the min(d, n-d) blocks
// it holds from r on to rank r-d, once it has the blocks of step k-1. ReduceScatter is the
// transpose: distances 2^(K-1) down to 1, rank q sends to q+d the partial sums of the min(d, n-d)
// blocks from q+d on, once it has reduced what step k+1 brought. Each rank sends (n-1)/n·S in
// all, as on a ring, in log steps instead of n-1.
// Uncontended, per-rank bandwidth B, per-step latency a, operation latency o:
//   o + K·a + (n-1)/n·S/B.
// With NCCL's protocol model the latencies are NCCL's for PAT (nccl_plan_options: o = 8 us +
// 2.8 us per rank, a = the tree's network latency / 3.5) and its bandwidth is held to NCCL's
// model of the kernel, 0.75 of the NIC (nccl_tuner.hpp).
#include <bit>

#include "sim/collectives/algorithms/algorithm_registry.hpp"
#include "sim/collectives/algorithms/ring_phases.hpp"
#include "sim/common/input_error.hpp"

namespace stepsim::collectives {
namespace {

class PatAlgorithm final : public Algorithm {
 public:
  std::string_view name() const override { return "pat"; }

  std::optional<std::string> unsupported(const Operation& op,
                                         const GroupShape& group) const override {
    if (op.kind != CollectiveKind::kAllGather && op.kind != CollectiveKind::kReduceScatter)
      return "PAT runs AllGather and ReduceScatter only";
    if (group.size >= 2 && group.num_domains() != group.size)
      return "PAT runs with one member per scale-up domain only (NCCL: one GPU per node)";
    return std::nullopt;
  }

  Plan plan(const Operation& op, const GroupShape& group,
            const PlanOptions& options) const override {
    if (auto why = unsupported(op, group)) throw InputError("pat: " + *why);
    const std::uint32_t n = group.size;
    PlanBuilder builder;
    if (n < 2) return std::move(builder).finish(member_reduction(op.kind));
    const auto steps = static_cast<std::uint32_t>(std::bit_width(n - 1));  // ceil(log2 n)
    // The bytes of blocks [first, first + count) (mod n).
    const auto blocks = [&](std::uint32_t first, std::uint32_t count) {
      std::int64_t bytes = 0;
      for (std::uint32_t i = 0; i < count; ++i)
        bytes += detail::share(op.size, n, (first + i) % n).count();
      return Bytes(bytes);
    };
    const bool gather = op.kind == CollectiveKind::kAllGather;
    // The transfer that last brought each rank data: the next step's send waits for it.
    std::vector<std::optional<TransferId>> received(n), next(n);
    for (std::uint32_t j = 0; j < steps; ++j) {
      const std::uint32_t k = gather ? j : steps - 1 - j;
      const std::uint32_t d = 1u << k;
      const std::uint32_t count = std::min(d, n - d);
      for (std::uint32_t r = 0; r < n; ++r) {
        const std::uint32_t to = gather ? (r + n - d) % n : (r + d) % n;
        const Bytes bytes = gather ? blocks(r, count) : blocks(to, count);
        std::vector<TransferId> deps;
        if (received[r]) deps.push_back(*received[r]);
        const Time latency = options.step_latency + (j == 0 ? options.op_latency : Time());
        next[to] =
            builder.add({Endpoint::member(r), Endpoint::member(to), bytes, latency, 1}, deps);
      }
      received.swap(next);
    }
    return std::move(builder).finish(member_reduction(op.kind));
  }
};

}  // namespace

void register_pat_algorithm(AlgorithmRegistry& registry) {
  registry.add("pat",
               "NCCL's PAT: AllGather/ReduceScatter in log2(n) aggregated steps (one member per "
               "scale-up domain)",
               [](const AlgorithmRegistry&) { return std::make_unique<PatAlgorithm>(); });
}

}  // namespace stepsim::collectives
