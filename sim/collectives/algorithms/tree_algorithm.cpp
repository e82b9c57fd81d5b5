// "tree": NCCL's double binary tree for AllReduce. Two binary trees (NCCL's ncclGetBtree, the
// second mirrored for even n and shifted for odd n, so that most ranks are a leaf in one tree)
// each carry half the buffer: reduce up to the root, then broadcast down, pipelined by chunks:
// chunk c crosses an edge after chunk c-1 crossed it, and after it arrived at the sender.
// Uncontended, with depth d (edges from root to the deepest leaf), C chunks per tree, per-edge
// bandwidth B and per-step latency a: (2d + C - 1)·(a + S/(2·C·B)).
// Across scale-up domains of several members each the trees are NCCL's: a chain inside every
// domain and the double binary tree across the domains, both trees on every channel (plan()).
#include <algorithm>

#include "sim/collectives/algorithms/algorithm_registry.hpp"
#include "sim/collectives/algorithms/double_binary_tree.hpp"
#include "sim/collectives/algorithms/ring_phases.hpp"
#include "sim/common/input_error.hpp"

namespace stepsim::collectives {
namespace {

constexpr std::int64_t kNoRank = kNoParent;

class TreeAlgorithm final : public Algorithm {
 public:
  std::string_view name() const override { return "tree"; }

  std::optional<std::string> unsupported(const Operation& op, const GroupShape&) const override {
    if (op.kind != CollectiveKind::kAllReduce) return "the double binary tree runs AllReduce only";
    return std::nullopt;
  }

  Plan plan(const Operation& op, const GroupShape& group,
            const PlanOptions& options) const override {
    if (auto why = unsupported(op, group)) throw InputError("tree: " + *why);
    const std::int64_t n = group.size;
    PlanBuilder builder;
    Frontier frontier(group.size);
    if (n < 2) return std::move(builder).finish(member_reduction(op.kind));
    std::vector<std::vector<TransferId>> done(group.size);
    const auto domains = group.domain_members();
    std::size_t largest = 1;
    for (const auto& d : domains)
      largest = std::max(largest, d.size());
    if (domains.size() < 2 || largest < 2) {
      // One domain, or one member per domain: the two trees over the members themselves.
      for (int tree = 0; tree < 2; ++tree)
        emit_tree(builder, dtree_parents(n, tree), detail::share(op.size, 2, tree), options, group,
                  frontier, done);
    } else {
      // NCCL's trees over nodes (src/graph/connect.cc, connectTrees; trees.cc): in each domain a
      // chain from the member that talks to the network, across domains the double binary tree
      // of the domains among those members. Every channel c of the graph leaves each domain
      // through its local member c (one NIC rail per channel, every NIC in use) and runs both
      // trees: NCCL doubles the channels, channel c on tree 0 and channel c + nChannels on tree
      // 1, so that every rail is an inner node of at most one tree. Each of the 2 x channels
      // trees carries 1/(2 x channels) of the buffer.
      const std::uint32_t channels = detail::channel_count(group, options);
      const auto nodes = static_cast<std::int64_t>(domains.size());
      for (std::uint32_t c = 0; c < channels; ++c) {
        std::vector<std::int64_t> chain(static_cast<std::size_t>(n), kNoRank);
        std::vector<std::uint32_t> leader(domains.size());
        for (std::size_t d = 0; d < domains.size(); ++d) {
          const auto& members = domains[d];
          const auto m = static_cast<std::uint32_t>(members.size());
          const std::uint32_t lead = c % m;
          leader[d] = members[lead];
          for (std::uint32_t pos = 1; pos < m; ++pos)
            chain[members[(lead + pos) % m]] = members[(lead + pos - 1) % m];
        }
        for (int tree = 0; tree < 2; ++tree) {
          const auto node_parent = dtree_parents(nodes, tree);
          std::vector<std::int64_t> parent = chain;
          for (std::size_t d = 0; d < domains.size(); ++d)
            if (node_parent[d] != kNoRank)
              parent[leader[d]] = leader[static_cast<std::size_t>(node_parent[d])];
          emit_tree(builder, parent, detail::share(op.size, 2 * channels, 2 * c + tree), options,
                    group, frontier, done);
        }
      }
    }
    for (std::uint32_t m = 0; m < group.size; ++m)
      frontier.set_all(builder, m, done[m]);
    return std::move(builder).finish(member_reduction(op.kind));
  }

 private:
  // Whether chunk c pays the step latency. Without a protocol every chunk does (the closed form
  // (2d + C - 1)(a + S/(2CB))). With NCCL's protocols only the first: NCCL keeps NCCL_STEPS (8)
  // slots in flight per connection, so a later chunk's step latency overlaps the chunks before
  // it, and what remains is the pipeline's fill, o + 2d·a + (2d + C - 1)·S/(2CB).
  static bool paid(std::uint32_t c, const PlanOptions& options) {
    return c == 0 || options.protocol == ProtocolChoice::kOff;
  }

  static void emit_tree(PlanBuilder& builder, const std::vector<std::int64_t>& parent, Bytes bytes,
                        const PlanOptions& options, const GroupShape& group,
                        const Frontier& frontier, std::vector<std::vector<TransferId>>& done) {
    const auto n = static_cast<std::uint32_t>(parent.size());
    std::vector<std::vector<std::uint32_t>> children(n);
    std::uint32_t root = 0;
    for (std::uint32_t r = 0; r < n; ++r) {
      if (parent[r] == kNoRank)
        root = r;
      else
        children[static_cast<std::size_t>(parent[r])].push_back(r);
    }
    // Pre-order from the root; its reverse puts children before parents.
    std::vector<std::uint32_t> order{root};
    for (std::size_t i = 0; i < order.size(); ++i)
      for (std::uint32_t c : children[order[i]])
        order.push_back(c);
    const std::uint32_t chunks = detail::chunk_count(bytes, options);
    std::vector<TransferId> up(std::size_t{n} * chunks), down(std::size_t{n} * chunks);
    auto at = [&](std::uint32_t r, std::uint32_t c) { return std::size_t{c} * n + r; };
    for (std::uint32_t c = 0; c < chunks; ++c) {
      const Bytes chunk = detail::share(bytes, chunks, c);
      for (auto it = order.rbegin(); it != order.rend(); ++it) {
        const std::uint32_t r = *it;
        if (r == root) continue;
        std::vector<TransferId> deps;
        for (std::uint32_t child : children[r])
          deps.push_back(up[at(child, c)]);
        if (c > 0) deps.push_back(up[at(r, c - 1)]);
        if (c == 0)
          for (TransferId ready : frontier.deps(r))
            deps.push_back(ready);
        const Time step =
            paid(c, options)
                ? detail::step_latency(&group, r, static_cast<std::uint32_t>(parent[r]), options)
                : Time::zero();
        const Time extra = deps.empty() ? step + options.op_latency : step;
        up[at(r, c)] =
            builder.add({Endpoint::member(r),
                         Endpoint::member(static_cast<std::uint32_t>(parent[r])), chunk, extra, 1},
                        deps);
      }
      for (std::uint32_t r : order) {
        if (r == root) continue;
        const auto p = static_cast<std::uint32_t>(parent[r]);
        std::vector<TransferId> deps;
        if (p == root) {
          for (std::uint32_t sibling : children[root])
            deps.push_back(up[at(sibling, c)]);
          if (c == 0)
            for (TransferId ready : frontier.deps(root))
              deps.push_back(ready);
        } else {
          deps.push_back(down[at(p, c)]);
        }
        if (c > 0) deps.push_back(down[at(r, c - 1)]);
        down[at(r, c)] = builder.add(
            {Endpoint::member(p), Endpoint::member(r), chunk,
             paid(c, options) ? detail::step_latency(&group, p, r, options) : Time::zero(), 1},
            deps);
      }
    }
    for (std::uint32_t r = 0; r < n; ++r)
      if (r != root) done[r].push_back(down[at(r, chunks - 1)]);
    for (std::uint32_t child : children[root])
      done[root].push_back(up[at(child, chunks - 1)]);
  }
};

}  // namespace

void register_tree_algorithm(AlgorithmRegistry& registry) {
  registry.add("tree", "double binary tree (AllReduce): reduce up, broadcast down, pipelined",
               [](const AlgorithmRegistry&) { return std::make_unique<TreeAlgorithm>(); });
}

}  // namespace stepsim::collectives
