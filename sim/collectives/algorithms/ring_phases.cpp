#include "sim/collectives/algorithms/ring_phases.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

namespace stepsim::collectives::detail {

Bytes share(Bytes total, std::uint32_t parts, std::uint32_t index) {
  const std::int64_t base = total.count() / parts;
  const std::int64_t rest = total.count() % parts;
  return Bytes(base + (static_cast<std::int64_t>(index) < rest ? 1 : 0));
}

std::uint32_t chunk_count(Bytes bytes, const PlanOptions& options) {
  const std::int64_t size = std::max<std::int64_t>(options.chunk_size.count(), 1);
  const std::int64_t chunks = (bytes.count() + size - 1) / size;
  return static_cast<std::uint32_t>(
      std::clamp<std::int64_t>(chunks, 1, std::max<std::uint32_t>(options.max_chunks, 1)));
}

std::int64_t nvls_chunk_bytes(std::int64_t bytes, std::int64_t concurrent) {
  std::int64_t chunk = kNvlsStepBytes;
  if (bytes < 64 * concurrent * chunk) chunk = 64 << 10;
  if (bytes < 8 * concurrent * chunk) chunk = 32 << 10;
  if (bytes < 2 * concurrent * chunk) chunk = 16 << 10;
  return chunk;
}

Bytes nvls_step_bytes(Bytes data, std::int64_t chunk, const PlanOptions& options) {
  if (options.nvls_step_overhead.count() <= 0 || chunk <= 0) return data;
  const std::int64_t step = std::min<std::int64_t>(chunk, kNvlsStepBytes);
  const double factor = 1.0 + options.nvls_step_overhead.as_double() / static_cast<double>(step);
  return Bytes(std::llround(data.as_double() * factor));
}

Time step_latency(const GroupShape* group, std::uint32_t from, std::uint32_t to,
                  const PlanOptions& options) {
  if (group == nullptr || !options.net_step_latency || group->domain.empty() ||
      group->domain[from] == group->domain[to])
    return options.step_latency;
  return *options.net_step_latency;
}

Time start_latency(const Frontier& frontier, std::uint32_t member, Time step_latency,
                   const PlanOptions& options) {
  return frontier.has(member) ? step_latency : step_latency + options.op_latency;
}

namespace {

std::uint32_t steps_of(RingPhase phase, std::uint32_t n) {
  return phase == RingPhase::kAllReduce ? 2 * (n - 1) : n - 1;
}

// Segment a ring position sends at a step. Reduce-scatter: position i sends segment (i - k) and
// ends owning segment (i + 1); all-gather then circulates the owned segments: (i + 1 - k').
std::uint32_t segment_sent(RingPhase phase, std::uint32_t n, std::uint32_t i, std::uint32_t k) {
  const bool gather =
      phase == RingPhase::kAllGather || (phase == RingPhase::kAllReduce && k >= n - 1);
  const std::uint32_t kk = phase == RingPhase::kAllReduce && k >= n - 1 ? k - (n - 1) : k;
  const std::int64_t s =
      gather ? static_cast<std::int64_t>(i) + 1 - kk : static_cast<std::int64_t>(i) - kk;
  return static_cast<std::uint32_t>(((s % n) + n) % n);
}

// Collects, per member, the transfers after which it is done, then folds them into the frontier.
class DoneLists {
 public:
  explicit DoneLists(std::size_t members) : lists_(members) {}
  void add(std::uint32_t member, TransferId id) { lists_[member].push_back(id); }
  void apply(PlanBuilder& builder, Frontier& frontier) {
    for (std::uint32_t m = 0; m < lists_.size(); ++m)
      frontier.set_all(builder, m, lists_[m]);
  }

 private:
  std::vector<std::vector<TransferId>> lists_;
};

// The step latency of each edge of `ring` (edge i from ring[i] to ring[i + 1]).
std::vector<Time> edge_latencies(const std::vector<std::uint32_t>& ring, const GroupShape* group,
                                 const PlanOptions& options) {
  const auto n = static_cast<std::uint32_t>(ring.size());
  std::vector<Time> latency(n);
  for (std::uint32_t i = 0; i < n; ++i)
    latency[i] = step_latency(group, ring[i], ring[(i + 1) % n], options);
  return latency;
}

// The bytes edge i of a ring of n carries over all steps of `phase` when the ring's buffer is
// `bytes`, exactly the step-by-step form's: a reduce-scatter sends every segment but (i + 1), an
// all-gather every one but (i + 2).
Bytes fluid_edge_bytes(Bytes bytes, std::uint32_t n, std::uint32_t i, RingPhase phase) {
  Bytes edge_bytes;
  if (phase != RingPhase::kAllGather) edge_bytes += bytes - share(bytes, n, (i + 1) % n);
  if (phase != RingPhase::kReduceScatter) edge_bytes += bytes - share(bytes, n, (i + 2) % n);
  return edge_bytes;
}

}  // namespace

void emit_ring_steps(PlanBuilder& builder, std::span<const std::vector<std::uint32_t>> rings,
                     std::span<const Bytes> bytes, RingPhase phase, const PlanOptions& options,
                     Frontier& frontier, const GroupShape* group) {
  DoneLists done(frontier.size());
  for (std::size_t r = 0; r < rings.size(); ++r) {
    const auto& ring = rings[r];
    const auto n = static_cast<std::uint32_t>(ring.size());
    if (n < 2) continue;
    const std::uint32_t steps = steps_of(phase, n);
    const std::vector<Time> edge_latency = edge_latencies(ring, group, options);
    const std::uint32_t chunks = chunk_count(share(bytes[r], n, 0), options);
    const std::size_t base = builder.size();
    auto id = [&](std::uint32_t k, std::uint32_t c, std::uint32_t i) {
      return TransferId(static_cast<std::uint32_t>(base + (std::size_t{k} * chunks + c) * n + i));
    };
    for (std::uint32_t k = 0; k < steps; ++k)
      for (std::uint32_t c = 0; c < chunks; ++c)
        for (std::uint32_t i = 0; i < n; ++i) {
          const Bytes segment = share(bytes[r], n, segment_sent(phase, n, i, k));
          Transfer t{Endpoint::member(ring[i]), Endpoint::member(ring[(i + 1) % n]),
                     share(segment, chunks, c), edge_latency[i], 1};
          if (k == 0) {
            t.extra_latency = start_latency(frontier, ring[i], edge_latency[i], options);
            builder.add(t, frontier.deps(ring[i]));
          } else {
            // Chunk c of step k forwards what chunk c of step k-1 brought in (NCCL's pipelining).
            builder.add(t, {id(k - 1, c, (i + n - 1) % n)});
          }
        }
    for (std::uint32_t c = 0; c < chunks; ++c)
      for (std::uint32_t i = 0; i < n; ++i)
        done.add(ring[(i + 1) % n], id(steps - 1, c, i));
  }
  done.apply(builder, frontier);
}

void emit_ring_fluid(PlanBuilder& builder, std::span<const std::vector<std::uint32_t>> rings,
                     std::span<const Bytes> bytes, RingPhase phase, const PlanOptions& options,
                     Frontier& frontier, const GroupShape* group) {
  DoneLists done(frontier.size());
  for (std::size_t r = 0; r < rings.size(); ++r) {
    const auto& ring = rings[r];
    const auto n = static_cast<std::uint32_t>(ring.size());
    if (n < 2) continue;
    const std::uint32_t steps = steps_of(phase, n);
    // A step of the ring takes each edge's latency in turn as data goes round: every edge of the
    // fluid form is charged the mean (NCCL's model: intra steps at the intra latency, the steps
    // that cross domains at the network's).
    Time total;
    for (std::uint32_t i = 0; i < n; ++i)
      total += step_latency(group, ring[i], ring[(i + 1) % n], options);
    const Time mean = Time::ps(total.picoseconds() / n);
    for (std::uint32_t i = 0; i < n; ++i) {
      // The edge carries every segment its sender forwards over all steps, exactly the bytes of
      // the step-by-step form; its latency is that of `steps` consecutive steps.
      const Bytes edge_bytes = fluid_edge_bytes(bytes[r], n, i, phase);
      const Time extra = start_latency(frontier, ring[i], mean * steps, options);
      const TransferId t =
          builder.add({Endpoint::member(ring[i]), Endpoint::member(ring[(i + 1) % n]), edge_bytes,
                       extra, steps},
                      frontier.deps(ring[i]));
      done.add(ring[(i + 1) % n], t);
    }
  }
  done.apply(builder, frontier);
}

void emit_ring_pipelined(PlanBuilder& builder, std::span<const std::vector<std::uint32_t>> rings,
                         std::span<const Bytes> bytes, RingPhase phase, const PlanOptions& options,
                         Frontier& frontier, const GroupShape* group) {
  DoneLists done(frontier.size());
  for (std::size_t r = 0; r < rings.size(); ++r) {
    const auto& ring = rings[r];
    const auto n = static_cast<std::uint32_t>(ring.size());
    if (n < 2) continue;
    const std::uint32_t steps = steps_of(phase, n);
    const std::vector<Time> edge_latency = edge_latencies(ring, group, options);
    const std::uint32_t chunks = chunk_count(share(bytes[r], n, 0), options);
    // Hop k crosses edge first + k with the first chunk of the segment that step sends there
    // (the same segment throughout a phase). The chain crosses the n - (steps mod n) edges before
    // `first` once less than the others; like the step form's slowest member, it skips the
    // cheapest such run of edges: the least step latency, then the fewest edges between scale-up
    // domains (their routes cross the network), then the first.
    auto crosses = [&](std::uint32_t i) {
      return group != nullptr && !group->domain.empty() &&
             group->domain[ring[i]] != group->domain[ring[(i + 1) % n]];
    };
    const std::uint32_t skipped = n - steps % n;
    std::uint32_t first = 0;
    std::pair<Time, std::uint32_t> cheapest{Time::max(), 0};
    for (std::uint32_t f = 0; f < n; ++f) {
      std::pair<Time, std::uint32_t> run{Time::zero(), 0};
      for (std::uint32_t j = 1; j <= skipped; ++j) {
        const std::uint32_t i = (f + n - j) % n;
        run.first += edge_latency[i];
        run.second += crosses(i) ? 1 : 0;
      }
      if (run < cheapest) {
        cheapest = run;
        first = f;
      }
    }
    std::vector<Bytes> hop_bytes(steps);
    std::vector<Bytes> chain_on_edge(n);
    for (std::uint32_t k = 0; k < steps; ++k) {
      const std::uint32_t i = (first + k) % n;
      hop_bytes[k] = share(share(bytes[r], n, segment_sent(phase, n, i, k)), chunks, 0);
      chain_on_edge[i] += hop_bytes[k];
    }
    // Every edge's other bytes, as one fluid transfer from the start (its step latency once).
    std::vector<TransferId> edges(n);
    for (std::uint32_t i = 0; i < n; ++i) {
      const Time extra = start_latency(frontier, ring[i], edge_latency[i], options);
      edges[i] = builder.add({Endpoint::member(ring[i]), Endpoint::member(ring[(i + 1) % n]),
                              fluid_edge_bytes(bytes[r], n, i, phase) - chain_on_edge[i], extra, 1},
                             frontier.deps(ring[i]));
    }
    TransferId last{};
    for (std::uint32_t k = 0; k < steps; ++k) {
      const std::uint32_t i = (first + k) % n;
      Transfer t{Endpoint::member(ring[i]), Endpoint::member(ring[(i + 1) % n]), hop_bytes[k],
                 edge_latency[i], 1};
      std::vector<TransferId> deps(frontier.deps(ring[i]).begin(), frontier.deps(ring[i]).end());
      if (k == 0) {
        t.extra_latency = start_latency(frontier, ring[i], edge_latency[i], options);
      } else {
        deps.push_back(last);
      }
      last = builder.add(t, deps);
    }
    for (std::uint32_t i = 0; i < n; ++i) {
      done.add(ring[(i + 1) % n], edges[i]);
      done.add(ring[(i + 1) % n], last);
    }
  }
  done.apply(builder, frontier);
}

void emit_chain_steps(PlanBuilder& builder, std::span<const std::vector<std::uint32_t>> chains,
                      std::span<const Bytes> bytes, bool toward_head, const PlanOptions& options,
                      Frontier& frontier, const GroupShape* group) {
  DoneLists done(frontier.size());
  for (std::size_t r = 0; r < chains.size(); ++r) {
    const auto& chain = chains[r];
    const auto n = static_cast<std::uint32_t>(chain.size());
    if (n < 2) continue;
    const std::uint32_t edges = n - 1;
    const std::uint32_t chunks = chunk_count(bytes[r], options);
    // Edge e goes from hop e to hop e+1, the hops read from the head or from the tail.
    auto hop = [&](std::uint32_t e) { return toward_head ? chain[n - 1 - e] : chain[e]; };
    const std::size_t base = builder.size();
    auto id = [&](std::uint32_t c, std::uint32_t e) {
      return TransferId(static_cast<std::uint32_t>(base + std::size_t{c} * edges + e));
    };
    for (std::uint32_t c = 0; c < chunks; ++c)
      for (std::uint32_t e = 0; e < edges; ++e) {
        const Time latency = step_latency(group, hop(e), hop(e + 1), options);
        Transfer t{Endpoint::member(hop(e)), Endpoint::member(hop(e + 1)),
                   share(bytes[r], chunks, c), latency, 1};
        std::vector<TransferId> deps;
        if (e > 0) deps.push_back(id(c, e - 1));  // the chunk must have arrived
        if (c > 0) deps.push_back(id(c - 1, e));  // chunks leave a sender in order
        if (c == 0)                               // the sender must have reached the operation
          for (TransferId ready : frontier.deps(hop(e)))
            deps.push_back(ready);
        if (e == 0 && c == 0) t.extra_latency = start_latency(frontier, hop(0), latency, options);
        builder.add(t, deps);
      }
    if (toward_head) {
      done.add(hop(edges), id(chunks - 1, edges - 1));
    } else {
      for (std::uint32_t e = 0; e < edges; ++e)
        done.add(hop(e + 1), id(chunks - 1, e));
    }
  }
  done.apply(builder, frontier);
}

void emit_chain_fluid(PlanBuilder& builder, std::span<const std::vector<std::uint32_t>> chains,
                      std::span<const Bytes> bytes, bool toward_head, const PlanOptions& options,
                      Frontier& frontier, const GroupShape* group) {
  DoneLists done(frontier.size());
  for (std::size_t r = 0; r < chains.size(); ++r) {
    const auto& chain = chains[r];
    const auto n = static_cast<std::uint32_t>(chain.size());
    if (n < 2) continue;
    auto hop = [&](std::uint32_t e) { return toward_head ? chain[n - 1 - e] : chain[e]; };
    // Every edge streams the whole buffer at once; the last hop waits (n-1) step latencies.
    const std::uint32_t edges = n - 1;
    Time chain_latency;  // the last hop waits every edge's step latency
    for (std::uint32_t e = 0; e < edges; ++e)
      chain_latency += step_latency(group, hop(e), hop(e + 1), options);
    std::vector<TransferId> ids;
    for (std::uint32_t e = 0; e < edges; ++e) {
      const Time extra = start_latency(frontier, hop(0), chain_latency, options);
      std::vector<TransferId> deps(frontier.deps(hop(0)).begin(), frontier.deps(hop(0)).end());
      if (e > 0)
        for (TransferId ready : frontier.deps(hop(e)))
          deps.push_back(ready);
      ids.push_back(builder.add(
          {Endpoint::member(hop(e)), Endpoint::member(hop(e + 1)), bytes[r], extra, edges}, deps));
    }
    if (toward_head) {
      done.add(hop(edges), ids.back());
    } else {
      for (std::uint32_t e = 0; e < edges; ++e)
        done.add(hop(e + 1), ids[e]);
    }
  }
  done.apply(builder, frontier);
}

std::uint32_t channel_count(const GroupShape& group, const PlanOptions& options) {
  if (options.channels > 0) return options.channels;
  if (group.num_domains() <= 1) return 1;
  std::size_t largest = 1;
  for (const auto& d : group.domain_members())
    largest = std::max(largest, d.size());
  return static_cast<std::uint32_t>(largest);
}

std::vector<std::vector<std::uint32_t>> channel_rings(const GroupShape& group,
                                                      std::uint32_t channels) {
  const auto domains = group.domain_members();
  const auto count = static_cast<std::uint32_t>(domains.size());
  std::vector<std::vector<std::uint32_t>> rings(channels);
  for (std::uint32_t c = 0; c < channels; ++c) {
    rings[c].reserve(group.size);
    for (std::uint32_t d = 0; d < count; ++d) {
      const auto& members = domains[d];
      const auto m = static_cast<std::uint32_t>(members.size());
      if (m == 1 || count == 1) {  // no rails to align: rotate by the channel
        for (std::uint32_t j = 0; j < m; ++j)
          rings[c].push_back(members[(c + 1 + j) % m]);
        continue;
      }
      // Enter at local (c + d), leave at local (c + d + 1): the edge to the next domain joins
      // the same local index on both sides (one NIC rail, no spine crossing in a rail-optimized
      // fabric). The last domain leaves at local c, closing the ring on rail c too, unless that
      // is where it entered (count = 1 mod m).
      const std::uint32_t enter = (c + d) % m;
      std::uint32_t leave = (c + d + 1) % m;
      if (d + 1 == count && enter != c % m) leave = c % m;
      rings[c].push_back(members[enter]);
      for (std::uint32_t j = 0; j < m; ++j)
        if (j != enter && j != leave) rings[c].push_back(members[j]);
      rings[c].push_back(members[leave]);
    }
  }
  return rings;
}

}  // namespace stepsim::collectives::detail
