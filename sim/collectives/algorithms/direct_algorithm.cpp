// "direct": every member sends straight to every member that needs its data, all at once. Natural
// for AllToAll(v) and Send/Recv, and for full meshes. AllReduce is a direct reduce-scatter, a join
// per member, then a direct all-gather. Uncontended on a switch (per-member link bandwidth B,
// latency a): AllToAll, AllGather, ReduceScatter a + (n-1)/n·S/B; AllReduce 2a + 2(n-1)/n·S/B;
// Broadcast and Reduce a + (n-1)·S/B (the root's link carries every copy).
// With PlanOptions::pxn, the point-to-point operations (AllToAll, AllToAllv, Send/Recv) relay a
// transfer between domains on different rails through the member of the sender's domain on the
// receiver's rail (GroupShape's PxnRelays), as NCCL does.
#include <optional>

#include "sim/collectives/algorithms/algorithm_registry.hpp"
#include "sim/collectives/algorithms/ring_phases.hpp"
#include "sim/common/input_error.hpp"

namespace stepsim::collectives {
namespace {

class DirectAlgorithm final : public Algorithm {
 public:
  std::string_view name() const override { return "direct"; }

  std::optional<std::string> unsupported(const Operation& op,
                                         const GroupShape& group) const override {
    if (op.kind == CollectiveKind::kAllToAllv &&
        op.matrix.size() != std::size_t{group.size} * group.size)
      return "alltoallv needs an n x n size matrix (" + std::to_string(group.size) + " x " +
             std::to_string(group.size) + ")";
    if ((op.kind == CollectiveKind::kBroadcast || op.kind == CollectiveKind::kReduce ||
         op.kind == CollectiveKind::kSendRecv) &&
        (op.root >= group.size || (op.kind == CollectiveKind::kSendRecv && op.peer >= group.size)))
      return "root or peer beyond the group of " + std::to_string(group.size);
    return std::nullopt;
  }

  Plan plan(const Operation& op, const GroupShape& group,
            const PlanOptions& options) const override {
    if (auto why = unsupported(op, group)) throw InputError("direct: " + *why);
    const std::uint32_t n = group.size;
    PlanBuilder builder;
    Frontier frontier(n);
    const bool point_to_point = op.kind == CollectiveKind::kAllToAll ||
                                op.kind == CollectiveKind::kAllToAllv ||
                                op.kind == CollectiveKind::kSendRecv;
    std::optional<PxnRelays> relays;
    if (options.pxn && point_to_point) relays.emplace(group);
    auto send = [&](std::uint32_t from, std::uint32_t to, Bytes bytes) {
      Transfer t{Endpoint::member(from), Endpoint::member(to), bytes,
                 detail::start_latency(frontier, from, options.step_latency, options), 1};
      if (relays)
        if (const auto relay = (*relays)(from, to)) t.relay = *relay;
      return builder.add(t, frontier.deps(from));
    };
    // All-pairs phase: bytes(i, j) from i to j; then every member's frontier is its receives.
    auto all_pairs = [&](auto bytes_of) {
      std::vector<std::vector<TransferId>> received(n);
      for (std::uint32_t i = 0; i < n; ++i)
        for (std::uint32_t j = 0; j < n; ++j) {
          if (i == j) continue;
          const Bytes b = bytes_of(i, j);
          if (op.kind == CollectiveKind::kAllToAllv && b.count() == 0) continue;
          received[j].push_back(send(i, j, b));
        }
      for (std::uint32_t j = 0; j < n; ++j)
        frontier.set_all(builder, j, received[j]);
    };
    switch (op.kind) {
      case CollectiveKind::kAllToAll:
        all_pairs([&](std::uint32_t, std::uint32_t j) { return detail::share(op.size, n, j); });
        break;
      case CollectiveKind::kAllToAllv:
        all_pairs(
            [&](std::uint32_t i, std::uint32_t j) { return op.matrix[std::size_t{i} * n + j]; });
        break;
      case CollectiveKind::kAllGather:
        all_pairs([&](std::uint32_t i, std::uint32_t) { return detail::share(op.size, n, i); });
        break;
      case CollectiveKind::kReduceScatter:
        all_pairs([&](std::uint32_t, std::uint32_t j) { return detail::share(op.size, n, j); });
        break;
      case CollectiveKind::kAllReduce:
        all_pairs([&](std::uint32_t, std::uint32_t j) { return detail::share(op.size, n, j); });
        all_pairs([&](std::uint32_t i, std::uint32_t) { return detail::share(op.size, n, i); });
        break;
      case CollectiveKind::kBroadcast:
        for (std::uint32_t j = 0; j < n; ++j)
          if (j != op.root) send(op.root, j, op.size);
        break;
      case CollectiveKind::kReduce:
        for (std::uint32_t i = 0; i < n; ++i)
          if (i != op.root) send(i, op.root, op.size);
        break;
      case CollectiveKind::kSendRecv:
        if (op.root != op.peer) send(op.root, op.peer, op.size);
        break;
    }
    return std::move(builder).finish(member_reduction(op.kind));
  }
};

}  // namespace

void register_direct_algorithm(AlgorithmRegistry& registry) {
  registry.add("direct", "all pairs at once (all-to-all, send/recv, full meshes)",
               [](const AlgorithmRegistry&) { return std::make_unique<DirectAlgorithm>(); });
}

}  // namespace stepsim::collectives
