// "nvls-tree": NCCL's NVLS-tree AllReduce across scale-up domains (NCCL 2.18 and later,
// NCCL_ALGO=NVLSTree): inside every domain the NVSwitch reduces (NVLS), across domains a double
// binary tree joins the domains, pipelined in chunks. Per chunk of S_c bytes, on a group of D
// domains of m members each:
//  1. reduce-scatter in the switch: every member streams S_c to its domain's switch, which
//     returns the member's reduced share S_c/m;
//  2. the members with the same local index (one NIC rail) AllReduce their share across the
//     domains on NCCL's double binary tree of the domains (two trees, half the share each:
//     reduce up to the root, broadcast down);
//  3. all-gather in the switch: every member sends its share up, the switch multicasts S_c down.
// Chunk c of a phase follows chunk c-1 of the same phase at the same member (a member's stream
// is in order) and chunk c of the phase before, so the phases overlap as NCCL's pipeline does.
// The first chunk carries the latencies (the pipeline's fill); the others follow at the rate the
// network gives them.
#include <algorithm>

#include "sim/collectives/algorithms/algorithm_registry.hpp"
#include "sim/collectives/algorithms/double_binary_tree.hpp"
#include "sim/collectives/algorithms/ring_phases.hpp"
#include "sim/common/input_error.hpp"

namespace stepsim::collectives {
namespace {

// Chunks of the pipeline. With NCCL's protocol model on, NCCL's NVLS-tree chunking
// (enqueue.cc, NVLS_TREE): K = channels x heads chunks at a time (NCCL_NVLS_NCHANNELS 16, one head
// per member of a domain: one NIC each), the chunk 2 MiB (the Simple buffer's 512 KiB step x 4
// ALLREDUCE_CHUNKSTEPS), 256 KiB below 32·K·chunk bytes, 128 KiB below 16·K·chunk, 64 KiB below
// 4·K·chunk, 32 KiB below K·chunk; a round moves K chunks. Without it, chunks of the plan's
// chunk_size per member. At most max_chunks either way. Also NCCL's chunk (0 without the protocol
// model), which sets the NVLS step cost of the switch phases.
struct Rounds {
  std::uint32_t count;
  std::int64_t nccl_chunk;
};
Rounds rounds(const Operation& op, std::uint32_t per_domain, const PlanOptions& options) {
  if (options.protocol == ProtocolChoice::kOff)
    return {detail::chunk_count(detail::share(op.size, per_domain, 0), options), 0};
  const std::int64_t ops = detail::kNvlsChannels * per_domain;
  const std::int64_t bytes = op.size.count();
  std::int64_t chunk = 2 << 20;
  if (bytes < 32 * ops * chunk) chunk = 256 << 10;
  if (bytes < 16 * ops * chunk) chunk = 128 << 10;
  if (bytes < 4 * ops * chunk) chunk = 64 << 10;
  if (bytes < ops * chunk) chunk = 32 << 10;
  const std::int64_t per_round = ops * chunk;
  return {
      static_cast<std::uint32_t>(std::clamp<std::int64_t>(
          (bytes + per_round - 1) / per_round, 1, std::max<std::uint32_t>(options.max_chunks, 1))),
      chunk};
}

class NvlsTreeAlgorithm final : public Algorithm {
 public:
  std::string_view name() const override { return "nvls-tree"; }

  std::optional<std::string> unsupported(const Operation& op,
                                         const GroupShape& group) const override {
    if (op.kind != CollectiveKind::kAllReduce) return "NVLS-tree runs AllReduce only";
    if (group.num_domains() < 2) return "NVLS-tree joins several scale-up domains (use in-switch)";
    const auto per_domain = group.uniform_domain_size();
    if (!per_domain || *per_domain < 2)
      return "NVLS-tree needs domains of equal size with 2 members or more";
    if (!group.domain_in_switch)
      return "not every scale-up domain of the group has a switch that reduces (NVLS)";
    return std::nullopt;
  }

  Plan plan(const Operation& op, const GroupShape& group,
            const PlanOptions& options) const override {
    if (auto why = unsupported(op, group)) throw InputError("nvls-tree: " + *why);
    const auto domains = group.domain_members();
    const auto nodes = static_cast<std::uint32_t>(domains.size());
    const auto m = static_cast<std::uint32_t>(domains.front().size());
    const Rounds pipeline = rounds(op, m, options);
    const std::uint32_t chunks = pipeline.count;
    // What a switch phase carries for `data`: with each NVLS chunk step's fixed cost.
    const auto through_switch = [&](Bytes data) {
      return detail::nvls_step_bytes(data, pipeline.nccl_chunk, options);
    };
    const Time net = options.net_step_latency.value_or(options.step_latency);
    const Time first = options.step_latency + options.op_latency;
    const std::vector<std::int64_t> trees[2] = {dtree_parents(nodes, 0), dtree_parents(nodes, 1)};
    std::vector<std::vector<std::uint32_t>> children[2];
    for (int t = 0; t < 2; ++t) {
      children[t].assign(nodes, {});
      for (std::uint32_t d = 0; d < nodes; ++d)
        if (trees[t][d] != kNoParent)
          children[t][static_cast<std::size_t>(trees[t][d])].push_back(d);
    }
    PlanBuilder builder;
    const std::size_t n = group.size;
    // The last transfer of each phase per member, chunk c-1 (kept to serialize chunk c).
    std::vector<TransferId> rs_up(n), rs_down(n), ag_up(n), ag_down(n);
    std::vector<std::vector<TransferId>> tree_up[2], tree_down[2];
    for (int t = 0; t < 2; ++t) {
      tree_up[t].assign(n, {});
      tree_down[t].assign(n, {});
    }
    std::vector<TransferId> deps;
    for (std::uint32_t c = 0; c < chunks; ++c) {
      const Bytes chunk = detail::share(op.size, chunks, c);
      const bool fill = c == 0;
      // 1. Reduce-scatter through each domain's switch.
      std::vector<TransferId> reduced(n);
      for (std::uint32_t d = 0; d < nodes; ++d) {
        std::vector<TransferId> ups;
        for (std::uint32_t i : domains[d]) {
          deps.clear();
          if (!fill) deps.push_back(rs_up[i]);
          rs_up[i] = builder.add({Endpoint::member(i), Endpoint::domain_switch(d),
                                  through_switch(chunk), fill ? first : Time::zero(), 1},
                                 deps);
          ups.push_back(rs_up[i]);
        }
        for (std::uint32_t j = 0; j < m; ++j) {
          const std::uint32_t i = domains[d][j];
          deps.assign(ups.begin(), ups.end());
          if (!fill) deps.push_back(rs_down[i]);
          rs_down[i] = builder.add({Endpoint::domain_switch(d), Endpoint::member(i),
                                    through_switch(detail::share(chunk, m, j)), Time::zero(), 1},
                                   deps);
          reduced[i] = rs_down[i];
        }
      }
      // 2. Across domains, members of the same local index: two trees, half the share each.
      std::vector<std::vector<TransferId>> holds(n);  // after these, member i has the result
      for (std::uint32_t j = 0; j < m; ++j) {
        for (int t = 0; t < 2; ++t) {
          const auto member = [&](std::uint32_t d) { return domains[d][j]; };
          const Bytes half = detail::share(detail::share(chunk, m, j), 2, t);
          // Up: children before parents (deepest first: reverse breadth-first order).
          std::vector<std::uint32_t> order;
          for (std::uint32_t d = 0; d < nodes; ++d)
            if (trees[t][d] == kNoParent) order.push_back(d);
          for (std::size_t k = 0; k < order.size(); ++k)
            for (std::uint32_t child : children[t][order[k]])
              order.push_back(child);
          std::vector<TransferId> up(nodes), down(nodes);
          for (auto it = order.rbegin(); it != order.rend(); ++it) {
            const std::uint32_t d = *it;
            if (trees[t][d] == kNoParent) continue;
            deps.assign({reduced[member(d)]});
            for (std::uint32_t child : children[t][d])
              deps.push_back(up[child]);
            if (!fill) deps.push_back(tree_up[t][member(d)].back());
            const auto parent = static_cast<std::uint32_t>(trees[t][d]);
            up[d] = builder.add({Endpoint::member(member(d)), Endpoint::member(member(parent)),
                                 half, fill ? net : Time::zero(), 1},
                                deps);
            tree_up[t][member(d)].assign({up[d]});
          }
          for (std::uint32_t d : order) {
            const auto i = member(d);
            if (trees[t][d] == kNoParent) {
              holds[i].push_back(reduced[i]);
              for (std::uint32_t child : children[t][d])
                holds[i].push_back(up[child]);
              continue;
            }
            const auto parent = static_cast<std::uint32_t>(trees[t][d]);
            deps.clear();
            if (trees[t][parent] == kNoParent) {
              deps.push_back(reduced[member(parent)]);
              for (std::uint32_t sibling : children[t][parent])
                deps.push_back(up[sibling]);
            } else {
              deps.push_back(down[parent]);
            }
            if (!fill) deps.push_back(tree_down[t][i].back());
            down[d] = builder.add({Endpoint::member(member(parent)), Endpoint::member(i), half,
                                   fill ? net : Time::zero(), 1},
                                  deps);
            tree_down[t][i].assign({down[d]});
            holds[i].push_back(down[d]);
          }
        }
      }
      // 3. All-gather through each domain's switch.
      for (std::uint32_t d = 0; d < nodes; ++d) {
        std::vector<TransferId> ups;
        for (std::uint32_t j = 0; j < m; ++j) {
          const std::uint32_t i = domains[d][j];
          deps.assign(holds[i].begin(), holds[i].end());
          if (!fill) deps.push_back(ag_up[i]);
          ag_up[i] = builder.add({Endpoint::member(i), Endpoint::domain_switch(d),
                                  through_switch(detail::share(chunk, m, j)), Time::zero(), 1},
                                 deps);
          ups.push_back(ag_up[i]);
        }
        for (std::uint32_t i : domains[d]) {
          deps.assign(ups.begin(), ups.end());
          if (!fill) deps.push_back(ag_down[i]);
          // The result comes back over the way up and the way down: two route latencies.
          ag_down[i] = builder.add({Endpoint::domain_switch(d), Endpoint::member(i),
                                    through_switch(chunk), Time::zero(), 2},
                                   deps);
        }
      }
    }
    return std::move(builder).finish(Reduction::kNone);  // the switches reduce
  }
};

}  // namespace

void register_nvls_tree_algorithm(AlgorithmRegistry& registry) {
  registry.add("nvls-tree",
               "NVLS inside every scale-up domain, a double binary tree across them (AllReduce)",
               [](const AlgorithmRegistry&) { return std::make_unique<NvlsTreeAlgorithm>(); });
}

}  // namespace stepsim::collectives
