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
#include <span>
#include <vector>

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

// The plan of one NVLS-tree AllReduce (above), built chunk after chunk. Each transfer follows the
// same phase's transfer of the chunk before at the same member (kept per member below).
class NvlsTreePlan {
 public:
  NvlsTreePlan(const Operation& op, const GroupShape& group, const PlanOptions& options)
      : op_(op),
        options_(options),
        domains_(group.domain_members()),
        nodes_(static_cast<std::uint32_t>(domains_.size())),
        m_(static_cast<std::uint32_t>(domains_.front().size())),
        pipeline_(rounds(op, m_, options)),
        net_(options.net_step_latency.value_or(options.step_latency)),
        first_(options.step_latency + options.op_latency),
        rs_up_(group.size),
        rs_down_(group.size),
        ag_up_(group.size),
        ag_down_(group.size) {
    for (int t = 0; t < 2; ++t) {
      trees_[t] = dtree_parents(nodes_, t);
      children_[t].assign(nodes_, {});
      for (std::uint32_t d = 0; d < nodes_; ++d)
        if (trees_[t][d] != kNoParent)
          children_[t][static_cast<std::size_t>(trees_[t][d])].push_back(d);
      // Breadth-first from the root (reversed: children before parents).
      for (std::uint32_t d = 0; d < nodes_; ++d)
        if (trees_[t][d] == kNoParent) order_[t].push_back(d);
      for (std::size_t k = 0; k < order_[t].size(); ++k)
        for (std::uint32_t child : children_[t][order_[t][k]])
          order_[t].push_back(child);
      tree_up_[t].resize(group.size);
      tree_down_[t].resize(group.size);
    }
  }

  Plan build() && {
    const std::size_t n = rs_up_.size();
    for (std::uint32_t c = 0; c < pipeline_.count; ++c) {
      const Bytes chunk = detail::share(op_.size, pipeline_.count, c);
      const bool fill = c == 0;
      std::vector<TransferId> reduced(n);
      reduce_scatter(chunk, fill, reduced);
      std::vector<std::vector<TransferId>> holds(n);  // after these, member i has the result
      for (std::uint32_t j = 0; j < m_; ++j) {
        for (int t = 0; t < 2; ++t)
          across_domains(j, t, chunk, fill, reduced, holds);
      }
      all_gather(chunk, fill, holds);
    }
    return std::move(builder_).finish(Reduction::kNone);  // the switches reduce
  }

 private:
  // What a switch phase carries for `data`: with each NVLS chunk step's fixed cost.
  Bytes through_switch(Bytes data) const {
    return detail::nvls_step_bytes(data, pipeline_.nccl_chunk, options_);
  }

  // 1. Reduce-scatter through each domain's switch: reduced[i], member i's reduced share.
  void reduce_scatter(Bytes chunk, bool fill, std::vector<TransferId>& reduced) {
    for (std::uint32_t d = 0; d < nodes_; ++d) {
      std::vector<TransferId> ups;
      for (std::uint32_t i : domains_[d]) {
        deps_.clear();
        if (!fill) deps_.push_back(rs_up_[i]);
        rs_up_[i] = builder_.add({Endpoint::member(i), Endpoint::domain_switch(d),
                                  through_switch(chunk), fill ? first_ : Time::zero(), 1},
                                 deps_);
        ups.push_back(rs_up_[i]);
      }
      for (std::uint32_t j = 0; j < m_; ++j) {
        const std::uint32_t i = domains_[d][j];
        deps_.assign(ups.begin(), ups.end());
        if (!fill) deps_.push_back(rs_down_[i]);
        rs_down_[i] = builder_.add({Endpoint::domain_switch(d), Endpoint::member(i),
                                    through_switch(detail::share(chunk, m_, j)), Time::zero(), 1},
                                   deps_);
        reduced[i] = rs_down_[i];
      }
    }
  }

  // 2. Across domains, the members of local index j on tree t, half the share: reduce up to the
  // root, broadcast down; holds[i] gets what member i's result waits for.
  void across_domains(std::uint32_t j, int t, Bytes chunk, bool fill,
                      std::span<const TransferId> reduced,
                      std::vector<std::vector<TransferId>>& holds) {
    const Bytes half = detail::share(detail::share(chunk, m_, j), 2, t);
    std::vector<TransferId> up(nodes_);
    tree_up(j, t, half, fill, reduced, up);
    tree_down(j, t, half, fill, reduced, up, holds);
  }

  // Up: children before parents (deepest first).
  void tree_up(std::uint32_t j, int t, Bytes half, bool fill, std::span<const TransferId> reduced,
               std::vector<TransferId>& up) {
    const auto member = [&](std::uint32_t d) { return domains_[d][j]; };
    for (auto it = order_[t].rbegin(); it != order_[t].rend(); ++it) {
      const std::uint32_t d = *it;
      if (trees_[t][d] == kNoParent) continue;
      deps_.assign({reduced[member(d)]});
      for (std::uint32_t child : children_[t][d])
        deps_.push_back(up[child]);
      if (!fill) deps_.push_back(tree_up_[t][member(d)]);
      const auto parent = static_cast<std::uint32_t>(trees_[t][d]);
      up[d] = builder_.add({Endpoint::member(member(d)), Endpoint::member(member(parent)), half,
                            fill ? net_ : Time::zero(), 1},
                           deps_);
      tree_up_[t][member(d)] = up[d];
    }
  }

  // Down: parents before children; the root holds the result once its children's sums are in.
  void tree_down(std::uint32_t j, int t, Bytes half, bool fill, std::span<const TransferId> reduced,
                 std::span<const TransferId> up, std::vector<std::vector<TransferId>>& holds) {
    const auto member = [&](std::uint32_t d) { return domains_[d][j]; };
    std::vector<TransferId> down(nodes_);
    for (std::uint32_t d : order_[t]) {
      const auto i = member(d);
      if (trees_[t][d] == kNoParent) {
        holds[i].push_back(reduced[i]);
        for (std::uint32_t child : children_[t][d])
          holds[i].push_back(up[child]);
        continue;
      }
      const auto parent = static_cast<std::uint32_t>(trees_[t][d]);
      deps_.clear();
      if (trees_[t][parent] == kNoParent) {
        deps_.push_back(reduced[member(parent)]);
        for (std::uint32_t sibling : children_[t][parent])
          deps_.push_back(up[sibling]);
      } else {
        deps_.push_back(down[parent]);
      }
      if (!fill) deps_.push_back(tree_down_[t][i]);
      down[d] = builder_.add({Endpoint::member(member(parent)), Endpoint::member(i), half,
                              fill ? net_ : Time::zero(), 1},
                             deps_);
      tree_down_[t][i] = down[d];
      holds[i].push_back(down[d]);
    }
  }

  // 3. All-gather through each domain's switch.
  void all_gather(Bytes chunk, bool fill, const std::vector<std::vector<TransferId>>& holds) {
    for (std::uint32_t d = 0; d < nodes_; ++d) {
      std::vector<TransferId> ups;
      for (std::uint32_t j = 0; j < m_; ++j) {
        const std::uint32_t i = domains_[d][j];
        deps_.assign(holds[i].begin(), holds[i].end());
        if (!fill) deps_.push_back(ag_up_[i]);
        ag_up_[i] = builder_.add({Endpoint::member(i), Endpoint::domain_switch(d),
                                  through_switch(detail::share(chunk, m_, j)), Time::zero(), 1},
                                 deps_);
        ups.push_back(ag_up_[i]);
      }
      for (std::uint32_t i : domains_[d]) {
        deps_.assign(ups.begin(), ups.end());
        if (!fill) deps_.push_back(ag_down_[i]);
        // The result comes back over the way up and the way down: two route latencies.
        ag_down_[i] = builder_.add({Endpoint::domain_switch(d), Endpoint::member(i),
                                    through_switch(chunk), Time::zero(), 2},
                                   deps_);
      }
    }
  }

  const Operation& op_;
  const PlanOptions& options_;
  const std::vector<std::vector<std::uint32_t>> domains_;
  const std::uint32_t nodes_;
  const std::uint32_t m_;
  const Rounds pipeline_;
  const Time net_;
  const Time first_;
  // NCCL's two double binary trees of the domains: parents, children, breadth-first order.
  std::vector<std::int64_t> trees_[2];
  std::vector<std::vector<std::uint32_t>> children_[2];
  std::vector<std::uint32_t> order_[2];
  PlanBuilder builder_;
  std::vector<TransferId> deps_;
  // The last transfer of each phase per member, chunk c-1 (kept to serialize chunk c).
  std::vector<TransferId> rs_up_, rs_down_, ag_up_, ag_down_;
  std::vector<TransferId> tree_up_[2], tree_down_[2];
};

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
    return NvlsTreePlan(op, group, options).build();
  }
};

}  // namespace

void register_nvls_tree_algorithm(AlgorithmRegistry& registry) {
  registry.add("nvls-tree",
               "NVLS inside every scale-up domain, a double binary tree across them (AllReduce)",
               [](const AlgorithmRegistry&) { return std::make_unique<NvlsTreeAlgorithm>(); });
}

}  // namespace stepsim::collectives
