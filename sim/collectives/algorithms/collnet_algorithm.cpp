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
// "collnet-chain": NCCL's CollNetChain AllReduce (NCCL_ALGO=CollNetChain): the same SHARP trees,
// reached through a chain inside each domain instead of a direct exchange. Chain k (one per member
// of a domain, so one per NIC) carries share k (S/m) and has local member k as its head; its other
// members follow in local order, k+1, ..., k+m-1 (mod m). Up the chain each member adds its part
// and passes the sum on (the bottom starts), the head sends the domain's sum into its rail's SHARP
// tree, takes the result back and passes it down the chain, each member keeping it and forwarding
// it. Per member and direction: 2(m-1)/m·S on the scale-up links (up in m-1 chains, down in m-1)
// and S/m through its NIC, as CollNet-Direct; what differs is the pipeline's depth: a chunk crosses
// 2(m-1) scale-up hops and the trees before the result is everywhere. NCCL moves a chain's data in
// chunks of 32-256 KiB (enqueue.cc: 256 KiB, halved while fewer than depth x 64 chunks per channel,
// and so on, depth = m); the plan sends each chain's first chunk hop by hop (the fill),
// the middle of its share as one fluid piece per hop that follows the first chunk on that hop, so
// every link works at once (the pipeline's steady state), and its last chunk hop by hop with
// NCCL's latencies (2(m-1) scale-up steps and one network step, tuning.cc): the drain, which
// charges the chain's depth once. The members reduce.
//
// "nvls-collnet": NCCL's NVLS algorithm across domains (NCCL enables multi-node NVLS only with
// CollNet): the same with phases 1 and 3 through each domain's NVSwitch, as "in-switch" runs them
// (every member streams S_c up and gets its reduced share back; it sends its share up and the
// switch multicasts S_c). Per member and direction: (1 + 1/m)·S on the scale-up links.
#include <algorithm>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "sim/collectives/algorithms/algorithm_registry.hpp"
#include "sim/collectives/algorithms/ring_phases.hpp"
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

// The SHARP trees of a group (GroupShape::network_tree) and the streams through them, chunk after
// chunk: each member sends its share up to its switch, each switch forwards the sum of its
// children to its parent once it has them, and the roots' result comes back down, one copy per
// link (the switches multicast). Chunk c of a stream follows chunk c-1 (a stream is in order).
class SharpTrees {
 public:
  explicit SharpTrees(const GroupShape& group)
      : tree_(*group.network_tree),
        local_(local_indices(group)),
        member_children_(tree_.switches()),
        switch_children_(tree_.switches()),
        member_up_(group.size),
        member_down_(group.size),
        switch_up_(tree_.switches()),
        switch_down_(tree_.switches()) {
    for (std::uint32_t i = 0; i < group.size; ++i)
      member_children_[tree_.member_switch[i]].push_back(i);
    for (std::uint32_t s = 0; s < tree_.switches(); ++s)
      if (tree_.switch_parent[s] != NetworkTree::kNone)
        switch_children_[tree_.switch_parent[s]].push_back(s);
    // Switches from the roots down, breadth first (reversed: every child before its parent).
    for (std::uint32_t s = 0; s < tree_.switches(); ++s)
      if (tree_.switch_parent[s] == NetworkTree::kNone) order_.push_back(s);
    for (std::size_t k = 0; k < order_.size(); ++k)
      for (std::uint32_t child : switch_children_[order_[k]])
        order_.push_back(child);
  }

  // The members' indices within their domains.
  const std::vector<std::uint32_t>& local() const { return local_; }

  // One chunk through the trees: member i sends by_local[local index of i] to its switch after
  // ready[i] (that send carrying `up_latency`); returns each member's transfer that brings it the
  // result. A `fluid` chunk (the rest of a pipelined stream, after a first chunk) waits on each
  // link for the chunk before it only: the data it needs keeps arriving behind that chunk.
  std::vector<TransferId> reduce(PlanBuilder& builder,
                                 std::span<const std::vector<TransferId>> ready,
                                 std::span<const Bytes> by_local, Time up_latency,
                                 bool fluid = false) {
    const std::size_t n = local_.size();
    std::vector<TransferId> deps;
    auto after = [&](const std::optional<TransferId>& previous) {
      if (previous) deps.push_back(*previous);
    };
    auto needs = [&](std::span<const TransferId> data) {
      deps.clear();
      if (!fluid) deps.assign(data.begin(), data.end());
    };
    std::vector<std::vector<TransferId>> into_switch(tree_.switches());
    for (std::uint32_t i = 0; i < n; ++i) {
      needs(ready[i]);
      after(member_up_[i]);
      const TransferId id =
          builder.add({Endpoint::member(i), Endpoint::network_switch(tree_.member_switch[i]),
                       by_local[local_[i]], up_latency, 1},
                      deps);
      member_up_[i] = id;
      into_switch[tree_.member_switch[i]].push_back(id);
    }
    // Bytes a switch carries: its rail's share (the share of any member below it).
    std::vector<Bytes> carried(tree_.switches());
    for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
      const std::uint32_t s = *it;
      if (!member_children_[s].empty()) {
        carried[s] = by_local[local_[member_children_[s].front()]];
      } else if (!switch_children_[s].empty()) {
        carried[s] = carried[switch_children_[s].front()];
      }
      const std::uint32_t parent = tree_.switch_parent[s];
      if (parent == NetworkTree::kNone) continue;
      needs(into_switch[s]);
      after(switch_up_[s]);
      const TransferId id =
          builder.add({Endpoint::network_switch(s), Endpoint::network_switch(parent), carried[s],
                       Time::zero(), 1},
                      deps);
      switch_up_[s] = id;
      into_switch[parent].push_back(id);
    }
    // Down from each root: a switch forwards the result once it has it.
    std::vector<std::vector<TransferId>> has_result(tree_.switches());
    for (std::uint32_t s : order_) {
      const std::uint32_t parent = tree_.switch_parent[s];
      if (parent == NetworkTree::kNone) {
        has_result[s] = into_switch[s];
        continue;
      }
      needs(has_result[parent]);
      after(switch_down_[s]);
      const TransferId id = builder.add({Endpoint::network_switch(parent),
                                         Endpoint::network_switch(s), carried[s], Time::zero(), 1},
                                        deps);
      switch_down_[s] = id;
      has_result[s].assign({id});
    }
    std::vector<TransferId> result(n);
    for (std::uint32_t i = 0; i < n; ++i) {
      const std::uint32_t s = tree_.member_switch[i];
      needs(has_result[s]);
      after(member_down_[i]);
      result[i] = builder.add(
          {Endpoint::network_switch(s), Endpoint::member(i), by_local[local_[i]], Time::zero(), 1},
          deps);
      member_down_[i] = result[i];
    }
    return result;
  }

 private:
  const NetworkTree& tree_;
  std::vector<std::uint32_t> local_;
  std::vector<std::vector<std::uint32_t>> member_children_;
  std::vector<std::vector<std::uint32_t>> switch_children_;
  std::vector<std::uint32_t> order_;
  // The last transfer of each stream.
  std::vector<std::optional<TransferId>> member_up_, member_down_, switch_up_, switch_down_;
};

// Why a CollNet algorithm cannot run the operation on the group; nullopt when it can.
std::optional<std::string> collnet_unsupported(const Operation& op, const GroupShape& group) {
  if (op.kind != CollectiveKind::kAllReduce) return "CollNet runs AllReduce only here";
  if (group.num_domains() < 2) return "CollNet joins several scale-up domains";
  if (!group.uniform_domain_size()) return "CollNet needs domains of equal size";
  if (!group.network_tree)
    return "no SHARP tree: the group's members need one NIC each, and the fabric switches "
           "that join each rail must reduce (the fat-tree's sharp=true)";
  if (!trees_match_domains(group))
    return "the SHARP trees do not join one member of every domain at the same position "
           "(the members of each domain must sit on the same rails)";
  return std::nullopt;
}

// The plan of one CollNet-Direct or NVLS-CollNet AllReduce (above), built chunk after chunk. Each
// stream's transfer follows its transfer (or join) of the chunk before (kept per member below).
class CollNetPlan {
 public:
  CollNetPlan(const Operation& op, const GroupShape& group, const PlanOptions& options, bool nvls)
      : op_(op),
        options_(options),
        nvls_(nvls),
        trees_(group),
        domains_(group.domain_members()),
        m_(static_cast<std::uint32_t>(domains_.front().size())),
        // nvls-collnet's switch phases: NCCL's NVLS chunk (16 channels, one head per member of a
        // domain) and its step cost; none without the protocol model.
        nvls_chunk_(options.protocol == ProtocolChoice::kOff
                        ? 0
                        : detail::nvls_chunk_bytes(op.size.count(), detail::kNvlsChannels * m_)),
        intra_first_(options.step_latency + options.op_latency),
        net_first_(options.net_step_latency.value_or(options.step_latency)),
        rs_sent_(group.size),
        ag_sent_(group.size),
        rs_down_(group.size),
        ag_down_(group.size) {}

  Plan build() && {
    const std::size_t n = rs_sent_.size();
    const std::uint32_t chunks = chunks_for(detail::share(op_.size, m_, 0), options_);
    for (std::uint32_t c = 0; c < chunks; ++c) {
      const Bytes chunk = detail::share(op_.size, chunks, c);
      const bool fill = c == 0;
      // 1. Reduce-scatter inside each domain.
      std::vector<std::vector<TransferId>> incoming(n);
      if (m_ > 1 && nvls_) {
        reduce_scatter_in_switch(chunk, fill, incoming);
      } else if (m_ > 1) {
        reduce_scatter_direct(chunk, fill, incoming);
      }
      // 2. Up the SHARP trees and back: each member's share.
      std::vector<Bytes> by_local(m_);
      for (std::uint32_t k = 0; k < m_; ++k)
        by_local[k] = detail::share(chunk, m_, k);
      const std::vector<TransferId> result =
          trees_.reduce(builder_, incoming, by_local, fill ? net_first_ : Time::zero());
      // 3. All-gather inside each domain.
      if (m_ == 1) continue;
      if (nvls_) {
        all_gather_in_switch(chunk, result);
      } else {
        all_gather_direct(chunk, fill, result);
      }
    }
    return std::move(builder_).finish(Reduction::kNone);  // the switches reduce
  }

 private:
  Bytes through_switch(Bytes data) const {
    return detail::nvls_step_bytes(data, nvls_chunk_, options_);
  }
  void after(const std::optional<TransferId>& previous) {
    if (previous) deps_.push_back(*previous);
  }

  void reduce_scatter_in_switch(Bytes chunk, bool fill,
                                std::vector<std::vector<TransferId>>& incoming) {
    const auto& local = trees_.local();
    for (std::uint32_t d = 0; d < domains_.size(); ++d) {
      std::vector<TransferId> ups;
      for (std::uint32_t i : domains_[d]) {
        deps_.clear();
        after(rs_sent_[i]);
        rs_sent_[i] = builder_.add({Endpoint::member(i), Endpoint::domain_switch(d),
                                    through_switch(chunk), fill ? intra_first_ : Time::zero(), 1},
                                   deps_);
        ups.push_back(*rs_sent_[i]);
      }
      for (std::uint32_t i : domains_[d]) {
        deps_.assign(ups.begin(), ups.end());
        after(rs_down_[i]);
        rs_down_[i] =
            builder_.add({Endpoint::domain_switch(d), Endpoint::member(i),
                          through_switch(detail::share(chunk, m_, local[i])), Time::zero(), 1},
                         deps_);
        incoming[i].push_back(*rs_down_[i]);
      }
    }
  }

  void reduce_scatter_direct(Bytes chunk, bool fill,
                             std::vector<std::vector<TransferId>>& incoming) {
    for (const auto& members : domains_)
      for (std::uint32_t j = 0; j < m_; ++j) {
        const std::uint32_t i = members[j];
        std::vector<TransferId> sends;
        for (std::uint32_t k = 0; k < m_; ++k) {
          if (k == j) continue;
          deps_.clear();
          after(rs_sent_[i]);
          const TransferId id =
              builder_.add({Endpoint::member(i), Endpoint::member(members[k]),
                            detail::share(chunk, m_, k), fill ? intra_first_ : Time::zero(), 1},
                           deps_);
          sends.push_back(id);
          incoming[members[k]].push_back(id);
        }
        rs_sent_[i] = builder_.join(i, sends);
      }
  }

  void all_gather_in_switch(Bytes chunk, std::span<const TransferId> result) {
    const auto& local = trees_.local();
    for (std::uint32_t d = 0; d < domains_.size(); ++d) {
      std::vector<TransferId> ups;
      for (std::uint32_t i : domains_[d]) {
        deps_.assign({result[i]});
        after(ag_sent_[i]);
        // NCCL's NVLS latency is one NVLink step and one network step in all (tuning.cc).
        ag_sent_[i] =
            builder_.add({Endpoint::member(i), Endpoint::domain_switch(d),
                          through_switch(detail::share(chunk, m_, local[i])), Time::zero(), 1},
                         deps_);
        ups.push_back(*ag_sent_[i]);
      }
      for (std::uint32_t i : domains_[d]) {
        deps_.assign(ups.begin(), ups.end());
        after(ag_down_[i]);
        // The result comes back over the way up and the way down: two route latencies.
        ag_down_[i] = builder_.add({Endpoint::domain_switch(d), Endpoint::member(i),
                                    through_switch(chunk), Time::zero(), 2},
                                   deps_);
      }
    }
  }

  void all_gather_direct(Bytes chunk, bool fill, std::span<const TransferId> result) {
    for (const auto& members : domains_)
      for (std::uint32_t j = 0; j < m_; ++j) {
        const std::uint32_t i = members[j];
        std::vector<TransferId> sends;
        for (std::uint32_t k = 0; k < m_; ++k) {
          if (k == j) continue;
          deps_.assign({result[i]});
          after(ag_sent_[i]);
          sends.push_back(builder_.add(
              {Endpoint::member(i), Endpoint::member(members[k]), detail::share(chunk, m_, j),
               fill ? options_.step_latency : Time::zero(), 1},
              deps_));
        }
        ag_sent_[i] = builder_.join(i, sends);
      }
  }

  const Operation& op_;
  const PlanOptions& options_;
  const bool nvls_;
  SharpTrees trees_;
  const std::vector<std::vector<std::uint32_t>> domains_;
  const std::uint32_t m_;
  const std::int64_t nvls_chunk_;
  const Time intra_first_;
  const Time net_first_;
  PlanBuilder builder_;
  std::vector<TransferId> deps_;
  // The last transfer (or join) of each stream, chunk c-1.
  std::vector<std::optional<TransferId>> rs_sent_, ag_sent_;
  std::vector<std::optional<TransferId>> rs_down_, ag_down_;  // NVLS: from the domain switch
};

class CollNetAlgorithm final : public Algorithm {
 public:
  explicit CollNetAlgorithm(bool nvls) : nvls_(nvls) {}
  std::string_view name() const override { return nvls_ ? "nvls-collnet" : "collnet"; }

  std::optional<std::string> unsupported(const Operation& op,
                                         const GroupShape& group) const override {
    if (auto why = collnet_unsupported(op, group)) return why;
    if (nvls_ && (*group.uniform_domain_size() < 2 || !group.domain_in_switch))
      return "not every scale-up domain of the group has a switch that reduces (NVLS), with 2 "
             "members or more";
    return std::nullopt;
  }

  Plan plan(const Operation& op, const GroupShape& group,
            const PlanOptions& options) const override {
    if (auto why = unsupported(op, group)) throw InputError(std::string(name()) + ": " + *why);
    return CollNetPlan(op, group, options, nvls_).build();
  }

 private:
  bool nvls_;
};

// NCCL's chunk for a CollNetChain AllReduce of `bytes` (enqueue.cc): 256 KiB, halved to 128 KiB
// while each channel would get fewer than depth x 64 chunks, to 64 KiB below depth x 8, to 32 KiB
// below depth; depth is the chain's length, m. stepsim runs one chain per member of a domain
// (one per NIC), so m channels.
std::int64_t chain_chunk_bytes(std::int64_t bytes, std::uint32_t m) {
  const std::int64_t depth = m;
  const auto per_channel_chunks = [&](std::int64_t chunk) { return bytes / (m * chunk); };
  std::int64_t chunk = std::int64_t{256} << 10;
  while (per_channel_chunks(chunk) < depth * 64 && chunk > (std::int64_t{128} << 10))
    chunk /= 2;
  while (per_channel_chunks(chunk) < depth * 8 && chunk > (std::int64_t{64} << 10))
    chunk /= 2;
  while (per_channel_chunks(chunk) < depth && chunk > (std::int64_t{32} << 10))
    chunk /= 2;
  return chunk;
}

class CollNetChainAlgorithm final : public Algorithm {
 public:
  std::string_view name() const override { return "collnet-chain"; }

  std::optional<std::string> unsupported(const Operation& op,
                                         const GroupShape& group) const override {
    return collnet_unsupported(op, group);
  }

  Plan plan(const Operation& op, const GroupShape& group,
            const PlanOptions& options) const override {
    if (auto why = unsupported(op, group)) throw InputError(std::string(name()) + ": " + *why);
    SharpTrees trees(group);
    const auto domains = group.domain_members();
    const auto m = static_cast<std::uint32_t>(domains.front().size());
    const std::size_t n = group.size;
    const std::int64_t chunk = options.protocol == ProtocolChoice::kOff
                                   ? std::max<std::int64_t>(options.chunk_size.count(), 1)
                                   : chain_chunk_bytes(op.size.count(), m);
    const std::vector<Piece> pieces = pieces_of(op.size, m, chunk);
    const Time net = options.net_step_latency.value_or(options.step_latency);

    PlanBuilder builder;
    std::vector<TransferId> deps;
    // The last transfer of each member's stream up and down chain k: index member x m + k.
    std::vector<std::optional<TransferId>> up_sent(n * m), down_sent(n * m);
    const auto stream = [&](std::uint32_t member, std::uint32_t k) { return member * m + k; };
    // Every transfer of the fluid piece: the last chunk leaves once they have all ended.
    std::vector<TransferId> middle;
    std::optional<TransferId> middle_done;
    for (std::size_t piece = 0; piece < pieces.size(); ++piece) {
      const Piece& pc = pieces[piece];
      const std::size_t first_transfer = builder.size();
      if (!middle.empty()) middle_done = builder.join(0, middle);
      const Time step = pc.latencies ? options.step_latency : Time::zero();
      const Time start = piece == 0 ? options.op_latency : Time::zero();
      // Up each chain, from its bottom (position m-1) to its head (position 0).
      std::vector<std::vector<TransferId>> ready(n);
      for (const auto& members : domains)
        for (std::uint32_t k = 0; k < m; ++k) {
          std::optional<TransferId> below;
          for (std::uint32_t p = m - 1; p >= 1; --p) {
            const std::uint32_t from = members[(k + p) % m], to = members[(k + p - 1) % m];
            deps.clear();
            if (below && !pc.fluid) deps.push_back(*below);
            if (up_sent[stream(from, k)]) deps.push_back(*up_sent[stream(from, k)]);
            if (!below && pc.latencies && middle_done) deps.push_back(*middle_done);
            below = builder.add({Endpoint::member(from), Endpoint::member(to), pc.bytes[k],
                                 step + (p == m - 1 ? start : Time::zero()), 1},
                                deps);
            up_sent[stream(from, k)] = below;
          }
          if (below) ready[members[k]].push_back(*below);
        }
      // The heads through the SHARP trees (with one member per domain the chain is its head, and
      // the operation's latency goes with its network step).
      const Time up_latency = (pc.latencies ? net : Time::zero()) + (m == 1 ? start : Time::zero());
      const std::vector<TransferId> result =
          trees.reduce(builder, ready, pc.bytes, up_latency, pc.fluid);
      // Down each chain, from its head.
      for (const auto& members : domains)
        for (std::uint32_t k = 0; k < m; ++k) {
          TransferId above = result[members[k]];
          for (std::uint32_t p = 1; p < m; ++p) {
            const std::uint32_t from = members[(k + p - 1) % m], to = members[(k + p) % m];
            deps.clear();
            if (!pc.fluid) deps.push_back(above);
            if (down_sent[stream(from, k)]) deps.push_back(*down_sent[stream(from, k)]);
            above = builder.add(
                {Endpoint::member(from), Endpoint::member(to), pc.bytes[k], step, 1}, deps);
            down_sent[stream(from, k)] = above;
          }
        }
      if (pc.fluid)
        for (std::size_t t = first_transfer; t < builder.size(); ++t)
          middle.push_back(TransferId(static_cast<std::uint32_t>(t)));
    }
    return std::move(builder).finish(Reduction::kByMembers);
  }

 private:
  // A piece of every chain's share, sent along the whole chain: bytes per chain, whether it
  // follows the piece before on each hop only (fluid) or also the same piece on the hop before
  // (hop by hop), and whether its hops carry NCCL's step latencies.
  struct Piece {
    std::vector<Bytes> bytes;
    bool fluid = false;
    bool latencies = false;
  };

  // A share of one chunk or less: one piece, hop by hop, with the latencies. More: the first chunk
  // hop by hop (the pipeline's fill), the middle as one fluid piece on every hop once the first
  // chunk has passed it, and the last chunk hop by hop with the latencies, once the whole middle
  // has arrived (the drain). The fluid piece lets a hop that starts late catch up with the ones
  // before it, which a real pipeline cannot, so the fill costs little; the drain charges the
  // chain's depth once, as NCCL's model does (a pipeline pays it once: its last chunk reaches the
  // end a depth after it leaves).
  static std::vector<Piece> pieces_of(Bytes size, std::uint32_t m, std::int64_t chunk) {
    const std::int64_t largest = detail::share(size, m, 0).count();
    const std::size_t count = largest <= chunk ? 1 : largest <= 2 * chunk ? 2 : 3;
    std::vector<Piece> pieces(count);
    for (auto& piece : pieces)
      piece.bytes.resize(m);
    for (std::uint32_t k = 0; k < m; ++k) {
      std::int64_t left = detail::share(size, m, k).count();
      const std::int64_t first = count == 1 ? left : std::min(chunk, left);
      const std::int64_t last = count == 1 ? 0 : std::min(chunk, left - first);
      pieces.front().bytes[k] = Bytes(first);
      pieces.back().bytes[k] = Bytes(count == 1 ? first : last);
      if (count == 3) pieces[1].bytes[k] = Bytes(left - first - last);
    }
    pieces.back().latencies = true;
    if (count == 3) pieces[1].fluid = true;
    return pieces;
  }
};

}  // namespace

void register_collnet_algorithm(AlgorithmRegistry& registry) {
  registry.add("collnet",
               "CollNet-Direct: inside each domain direct, across domains SHARP trees in the "
               "fabric's switches (AllReduce; fat-tree sharp=true)",
               [](const AlgorithmRegistry&) { return std::make_unique<CollNetAlgorithm>(false); });
  registry.add("collnet-chain",
               "CollNetChain: a chain inside each domain to its head, SHARP trees across domains "
               "(AllReduce; fat-tree sharp=true)",
               [](const AlgorithmRegistry&) { return std::make_unique<CollNetChainAlgorithm>(); });
  registry.add("nvls-collnet",
               "NVLS inside each domain, SHARP trees across domains (NCCL's multi-node NVLS; "
               "AllReduce; fat-tree sharp=true)",
               [](const AlgorithmRegistry&) { return std::make_unique<CollNetAlgorithm>(true); });
}

}  // namespace stepsim::collectives
