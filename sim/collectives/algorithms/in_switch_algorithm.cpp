// "in-switch": reduction in the network (NVLink SHARP "NVLS", InfiniBand SHARP). Every member
// streams its data to the group's reduction switch and receives the reduced result, as NCCL's
// NVLS AllReduce does: a reduce-scatter through the switch (each member sends all S bytes, the
// switch returns the member's reduced S/n) and a multicast all-gather (each member sends its S/n,
// the switch delivers all S to everyone). Per member: S + S/n up and S/n + S down, streamed
// concurrently (the switch pipelines). Uncontended: a + (1 + 1/n)·S/B, busbw =
// 2(n-1)/(n+1)·B — it grows with n, as the NVLS ramp of the published H200 figures does
// (validation/data/nccl_busbw.yaml, nvls_ramp).
#include <algorithm>

#include "sim/collectives/algorithms/algorithm_registry.hpp"
#include "sim/collectives/algorithms/ring_phases.hpp"
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
    if (options.protocol != ProtocolChoice::kOff) return pipelined(op, group, options);
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

 private:
  // NCCL's NVLS kernel (with the protocol model on): the buffer goes through the switch in rounds
  // of K = channels x heads chunks at once, the chunk size by NCCL's rule (detail::
  // nvls_chunk_bytes), with NCCL_NVLS_NCHANNELS = 16 channels and one head per member (a single
  // NVLink domain); each chunk step also pays PlanOptions::nvls_step_overhead. A
  // round is three stages: every member streams its part up (reduce-scatter), the switch returns
  // each member's reduced share and the member sends it back up (all-gather), the switch
  // multicasts the round's result. Round r+1 of a stage follows round r of it at each member, so
  // the stages overlap and the pipeline's fill (about two rounds) is what the middle sizes pay.
  // Rounds are at most kRoundsPerChunk x max_chunks (larger chunks beyond that: 1,024 by default,
  // so that the fill, two rounds, stays within 0.2% on the largest buffers; a round is 4n
  // transfers).
  static constexpr std::uint32_t kRoundsPerChunk = 16;
  static Plan pipelined(const Operation& op, const GroupShape& group, const PlanOptions& options) {
    const std::uint32_t n = group.size;
    const std::int64_t ops = detail::kNvlsChannels * n;
    const std::int64_t bytes = op.size.count();
    const std::int64_t chunk = detail::nvls_chunk_bytes(bytes, ops);
    const std::int64_t per_round = ops * chunk;
    const auto rounds = static_cast<std::uint32_t>(std::clamp<std::int64_t>(
        (bytes + per_round - 1) / per_round, 1,
        std::int64_t{kRoundsPerChunk} * std::max<std::uint32_t>(options.max_chunks, 1)));
    const bool reduce = op.kind != CollectiveKind::kAllGather;
    const bool gather = op.kind != CollectiveKind::kReduceScatter;
    PlanBuilder builder;
    const Time start = options.step_latency + options.op_latency;
    std::vector<TransferId> rs_up(n), rs_down(n), ag_up(n), ag_down(n), up_round(n);
    std::vector<TransferId> deps;
    for (std::uint32_t r = 0; r < rounds; ++r) {
      // The round's data with each chunk step's fixed cost (PlanOptions::nvls_step_overhead).
      const Bytes data = detail::nvls_step_bytes(detail::share(op.size, rounds, r), chunk, options);
      const Time latency = r == 0 ? start : Time::zero();
      if (reduce) {
        for (std::uint32_t i = 0; i < n; ++i) {
          deps.clear();
          if (r > 0) deps.push_back(rs_up[i]);
          rs_up[i] = builder.add(
              {Endpoint::member(i), Endpoint::reduction_switch(), data, latency, 1}, deps);
        }
        for (std::uint32_t i = 0; i < n; ++i) {
          deps.assign(rs_up.begin(), rs_up.end());
          if (r > 0) deps.push_back(rs_down[i]);
          rs_down[i] = builder.add({Endpoint::reduction_switch(), Endpoint::member(i),
                                    detail::share(data, n, i), Time::zero(), 1},
                                   deps);
        }
      }
      if (!gather) continue;
      for (std::uint32_t i = 0; i < n; ++i) {
        deps.clear();
        if (reduce) deps.push_back(rs_down[i]);
        if (r > 0) deps.push_back(ag_up[i]);
        ag_up[i] = builder.add({Endpoint::member(i), Endpoint::reduction_switch(),
                                detail::share(data, n, i), reduce ? Time::zero() : latency, 1},
                               deps);
      }
      for (std::uint32_t i = 0; i < n; ++i) {
        deps.assign(ag_up.begin(), ag_up.end());
        if (r > 0) deps.push_back(ag_down[i]);
        // The result comes back over the way up and the way down: two route latencies.
        ag_down[i] = builder.add(
            {Endpoint::reduction_switch(), Endpoint::member(i), data, Time::zero(), 2}, deps);
      }
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
