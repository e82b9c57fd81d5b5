// "collnet": NCCL's CollNet-Direct AllReduce with InfiniBand SHARP (NCCL_COLLNET_ENABLE=1 with the
// SHARP plugin): the reduction across scale-up domains happens in the fabric's switches. Per chunk
// of S_c bytes, on a group of D domains of m members each:
//  1. reduce-scatter inside each domain, direct: member j sends share k (S_c/m) to local member k,
//     for every k != j, over the scale-up network; member k then holds its domain's sum of
//     share k;
//  2. each member streams its share into its rail's SHARP tree (GroupShape::network_tree): up
//     from its NIC through the reducing switches to the rail's root, each switch forwarding the
//     sum of its children once it has them; the root's result comes back down the same tree, one
//     copy per link (the switches multicast);
//  3. all-gather inside each domain, direct: member j sends its reduced share to every local
//     member.
// Per member and direction: 2(m-1)/m·S on the scale-up links and S/m through its NIC, against
// 2(mD-1)/(mD)·S through the NIC for a flat ring: SHARP takes the cross-domain traffic down to one
// share per rail, and the scale-up links become what bounds the busbw. Chunk c of a phase follows
// chunk c-1 of the same phase at each member and switch (a stream is in order), and chunk c of the
// phase before, so the phases overlap as NCCL's pipeline does; the first chunk carries the
// latencies (the pipeline's fill).
//
// "nvls-collnet": NCCL's NVLS algorithm across domains (NCCL enables multi-node NVLS only with
// CollNet): the same with phases 1 and 3 through each domain's NVSwitch, as "in-switch" runs them
// (every member streams S_c up and gets its reduced share back; it sends its share up and the
// switch multicasts S_c). Per member and direction: (1 + 1/m)·S on the scale-up links.
#include <algorithm>

#include "sim/collectives/algorithm_registry.hpp"
#include "sim/collectives/ring_phases.hpp"
#include "sim/common/input_error.hpp"

namespace stepsim::collectives {
namespace {

// NCCL's Simple protocol moves a channel's buffer in NCCL_STEPS = 8 slots of 4 MiB / 8 = 512 KiB
// (NCCL_BUFFSIZE's default); a member's share goes through the network in chunks of that size.
constexpr std::int64_t kNcclChunkBytes = std::int64_t{512} << 10;

std::uint32_t chunks_for(Bytes member_share, const PlanOptions& options) {
  if (options.protocol == ProtocolChoice::kOff) return detail::chunk_count(member_share, options);
  const std::int64_t chunks = (member_share.count() + kNcclChunkBytes - 1) / kNcclChunkBytes;
  return static_cast<std::uint32_t>(
      std::clamp<std::int64_t>(chunks, 1, std::max<std::uint32_t>(options.max_chunks, 1)));
}

// Each member's index within its domain (group order).
std::vector<std::uint32_t> local_indices(const GroupShape& group) {
  std::vector<std::uint32_t> local(group.size);
  for (const auto& members : group.domain_members())
    for (std::uint32_t j = 0; j < members.size(); ++j)
      local[members[j]] = j;
  return local;
}

// Whether every SHARP tree joins one member of each domain, all with the same index within their
// domain (so that a tree reduces the same share everywhere).
bool trees_match_domains(const GroupShape& group) {
  const NetworkTree& tree = *group.network_tree;
  const auto local = local_indices(group);
  const std::uint32_t domains = group.num_domains();
  std::vector<std::uint32_t> root_local(tree.switches(), NetworkTree::kNone);
  std::vector<std::uint32_t> root_members(tree.switches(), 0);
  for (std::uint32_t i = 0; i < group.size; ++i) {
    std::uint32_t s = tree.member_switch[i];
    if (s == NetworkTree::kNone) return false;
    for (std::uint32_t hops = 0; tree.switch_parent[s] != NetworkTree::kNone; ++hops) {
      if (hops > tree.switches()) return false;  // not a tree
      s = tree.switch_parent[s];
    }
    if (root_local[s] == NetworkTree::kNone) root_local[s] = local[i];
    if (root_local[s] != local[i]) return false;
    ++root_members[s];
  }
  for (std::uint32_t s = 0; s < tree.switches(); ++s)
    if (root_local[s] != NetworkTree::kNone && root_members[s] != domains) return false;
  return true;
}

class CollNetAlgorithm final : public Algorithm {
 public:
  explicit CollNetAlgorithm(bool nvls) : nvls_(nvls) {}
  std::string_view name() const override { return nvls_ ? "nvls-collnet" : "collnet"; }

  std::optional<std::string> unsupported(const Operation& op,
                                         const GroupShape& group) const override {
    if (op.kind != CollectiveKind::kAllReduce) return "CollNet runs AllReduce only here";
    if (group.num_domains() < 2) return "CollNet joins several scale-up domains";
    const auto per_domain = group.uniform_domain_size();
    if (!per_domain) return "CollNet needs domains of equal size";
    if (!group.network_tree)
      return "no SHARP tree: the group's members need one NIC each, and the fabric switches "
             "that join each rail must reduce (the fat-tree's sharp=true)";
    if (nvls_ && (!per_domain || *per_domain < 2 || !group.domain_in_switch))
      return "not every scale-up domain of the group has a switch that reduces (NVLS), with 2 "
             "members or more";
    if (!trees_match_domains(group))
      return "the SHARP trees do not join one member of every domain at the same position "
             "(the members of each domain must sit on the same rails)";
    return std::nullopt;
  }

  Plan plan(const Operation& op, const GroupShape& group,
            const PlanOptions& options) const override {
    if (auto why = unsupported(op, group)) throw InputError(std::string(name()) + ": " + *why);
    const NetworkTree& tree = *group.network_tree;
    const auto domains = group.domain_members();
    const auto m = static_cast<std::uint32_t>(domains.front().size());
    const auto local = local_indices(group);
    const std::size_t n = group.size;
    const std::uint32_t chunks = chunks_for(detail::share(op.size, m, 0), options);
    // nvls-collnet's switch phases: NCCL's NVLS chunk (16 channels, one head per member of a
    // domain) and its step cost; none without the protocol model.
    const std::int64_t nvls_chunk =
        options.protocol == ProtocolChoice::kOff
            ? 0
            : detail::nvls_chunk_bytes(op.size.count(), detail::kNvlsChannels * m);
    const auto through_switch = [&](Bytes data) {
      return detail::nvls_step_bytes(data, nvls_chunk, options);
    };
    const Time intra_first = options.step_latency + options.op_latency;
    const Time net_first = options.net_step_latency.value_or(options.step_latency);
    // Children of each tree switch: members attached to it and child switches.
    std::vector<std::vector<std::uint32_t>> member_children(tree.switches());
    std::vector<std::vector<std::uint32_t>> switch_children(tree.switches());
    for (std::uint32_t i = 0; i < n; ++i)
      member_children[tree.member_switch[i]].push_back(i);
    for (std::uint32_t s = 0; s < tree.switches(); ++s)
      if (tree.switch_parent[s] != NetworkTree::kNone)
        switch_children[tree.switch_parent[s]].push_back(s);
    // Switches with every child before its parent: reverse breadth-first order from the roots.
    std::vector<std::uint32_t> order;
    for (std::uint32_t s = 0; s < tree.switches(); ++s)
      if (tree.switch_parent[s] == NetworkTree::kNone) order.push_back(s);
    for (std::size_t k = 0; k < order.size(); ++k)
      for (std::uint32_t child : switch_children[order[k]])
        order.push_back(child);

    PlanBuilder builder;
    std::vector<TransferId> deps;
    // The last transfer (or join) of each stream, chunk c-1.
    std::vector<std::optional<TransferId>> rs_sent(n), ag_sent(n), member_up(n), member_down(n);
    std::vector<std::optional<TransferId>> rs_down(n), ag_down(n);  // NVLS: from the domain switch
    std::vector<std::optional<TransferId>> switch_up(tree.switches()), switch_down(tree.switches());
    auto after = [&](const std::optional<TransferId>& previous) {
      if (previous) deps.push_back(*previous);
    };
    for (std::uint32_t c = 0; c < chunks; ++c) {
      const Bytes chunk = detail::share(op.size, chunks, c);
      const bool fill = c == 0;
      // 1. Reduce-scatter inside each domain.
      std::vector<std::vector<TransferId>> incoming(n);
      if (m > 1 && nvls_) {
        for (std::uint32_t d = 0; d < domains.size(); ++d) {
          std::vector<TransferId> ups;
          for (std::uint32_t i : domains[d]) {
            deps.clear();
            after(rs_sent[i]);
            rs_sent[i] = builder.add({Endpoint::member(i), Endpoint::domain_switch(d),
                                      through_switch(chunk), fill ? intra_first : Time::zero(), 1},
                                     deps);
            ups.push_back(*rs_sent[i]);
          }
          for (std::uint32_t i : domains[d]) {
            deps.assign(ups.begin(), ups.end());
            after(rs_down[i]);
            rs_down[i] =
                builder.add({Endpoint::domain_switch(d), Endpoint::member(i),
                             through_switch(detail::share(chunk, m, local[i])), Time::zero(), 1},
                            deps);
            incoming[i].push_back(*rs_down[i]);
          }
        }
      } else if (m > 1) {
        for (const auto& members : domains)
          for (std::uint32_t j = 0; j < m; ++j) {
            const std::uint32_t i = members[j];
            std::vector<TransferId> sends;
            for (std::uint32_t k = 0; k < m; ++k) {
              if (k == j) continue;
              deps.clear();
              after(rs_sent[i]);
              const TransferId id =
                  builder.add({Endpoint::member(i), Endpoint::member(members[k]),
                               detail::share(chunk, m, k), fill ? intra_first : Time::zero(), 1},
                              deps);
              sends.push_back(id);
              incoming[members[k]].push_back(id);
            }
            rs_sent[i] = builder.join(i, sends);
          }
      }
      // 2. Up the SHARP tree: each member's share, then each switch's sum.
      std::vector<std::vector<TransferId>> into_switch(tree.switches());
      for (std::uint32_t i = 0; i < n; ++i) {
        deps.assign(incoming[i].begin(), incoming[i].end());
        after(member_up[i]);
        const TransferId id =
            builder.add({Endpoint::member(i), Endpoint::network_switch(tree.member_switch[i]),
                         detail::share(chunk, m, local[i]), fill ? net_first : Time::zero(), 1},
                        deps);
        member_up[i] = id;
        into_switch[tree.member_switch[i]].push_back(id);
      }
      // Bytes a switch carries: its rail's share (the share of any member below it).
      std::vector<Bytes> carried(tree.switches());
      for (auto it = order.rbegin(); it != order.rend(); ++it) {
        const std::uint32_t s = *it;
        if (!member_children[s].empty()) {
          carried[s] = detail::share(chunk, m, local[member_children[s].front()]);
        } else if (!switch_children[s].empty()) {
          carried[s] = carried[switch_children[s].front()];
        }
        const std::uint32_t parent = tree.switch_parent[s];
        if (parent == NetworkTree::kNone) continue;
        deps.assign(into_switch[s].begin(), into_switch[s].end());
        after(switch_up[s]);
        const TransferId id =
            builder.add({Endpoint::network_switch(s), Endpoint::network_switch(parent), carried[s],
                         Time::zero(), 1},
                        deps);
        switch_up[s] = id;
        into_switch[parent].push_back(id);
      }
      // Down from each root: a switch forwards the result once it has it.
      std::vector<std::vector<TransferId>> has_result(tree.switches());
      for (std::uint32_t s : order) {
        const std::uint32_t parent = tree.switch_parent[s];
        if (parent == NetworkTree::kNone) {
          has_result[s] = into_switch[s];
          continue;
        }
        deps.assign(has_result[parent].begin(), has_result[parent].end());
        after(switch_down[s]);
        const TransferId id =
            builder.add({Endpoint::network_switch(parent), Endpoint::network_switch(s), carried[s],
                         Time::zero(), 1},
                        deps);
        switch_down[s] = id;
        has_result[s].assign({id});
      }
      std::vector<TransferId> result(n);
      for (std::uint32_t i = 0; i < n; ++i) {
        const std::uint32_t s = tree.member_switch[i];
        deps.assign(has_result[s].begin(), has_result[s].end());
        after(member_down[i]);
        result[i] = builder.add({Endpoint::network_switch(s), Endpoint::member(i),
                                 detail::share(chunk, m, local[i]), Time::zero(), 1},
                                deps);
        member_down[i] = result[i];
      }
      // 3. All-gather inside each domain.
      if (m == 1) continue;
      if (nvls_) {
        for (std::uint32_t d = 0; d < domains.size(); ++d) {
          std::vector<TransferId> ups;
          for (std::uint32_t i : domains[d]) {
            deps.assign({result[i]});
            after(ag_sent[i]);
            // NCCL's NVLS latency is one NVLink step and one network step in all (tuning.cc).
            ag_sent[i] =
                builder.add({Endpoint::member(i), Endpoint::domain_switch(d),
                             through_switch(detail::share(chunk, m, local[i])), Time::zero(), 1},
                            deps);
            ups.push_back(*ag_sent[i]);
          }
          for (std::uint32_t i : domains[d]) {
            deps.assign(ups.begin(), ups.end());
            after(ag_down[i]);
            // The result comes back over the way up and the way down: two route latencies.
            ag_down[i] = builder.add({Endpoint::domain_switch(d), Endpoint::member(i),
                                      through_switch(chunk), Time::zero(), 2},
                                     deps);
          }
        }
        continue;
      }
      for (const auto& members : domains)
        for (std::uint32_t j = 0; j < m; ++j) {
          const std::uint32_t i = members[j];
          std::vector<TransferId> sends;
          for (std::uint32_t k = 0; k < m; ++k) {
            if (k == j) continue;
            deps.assign({result[i]});
            after(ag_sent[i]);
            sends.push_back(builder.add(
                {Endpoint::member(i), Endpoint::member(members[k]), detail::share(chunk, m, j),
                 fill ? options.step_latency : Time::zero(), 1},
                deps));
          }
          ag_sent[i] = builder.join(i, sends);
        }
    }
    return std::move(builder).finish(Reduction::kNone);  // the switches reduce
  }

 private:
  bool nvls_;
};

}  // namespace

void register_collnet_algorithm(AlgorithmRegistry& registry) {
  registry.add("collnet",
               "CollNet-Direct: inside each domain direct, across domains SHARP trees in the "
               "fabric's switches (AllReduce; fat-tree sharp=true)",
               [](const AlgorithmRegistry&) { return std::make_unique<CollNetAlgorithm>(false); });
  registry.add("nvls-collnet",
               "NVLS inside each domain, SHARP trees across domains (NCCL's multi-node NVLS; "
               "AllReduce; fat-tree sharp=true)",
               [](const AlgorithmRegistry&) { return std::make_unique<CollNetAlgorithm>(true); });
}

}  // namespace stepsim::collectives
