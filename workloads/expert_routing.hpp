// How routed tokens spread over expert-parallel ranks. Uniform routing (skew 0) sends every rank
// the same share; with skew s > 0 expert e (0-based) receives tokens in proportion to
// (e + 1)^-s (a Zipf law; the most popular experts sit on the first ranks, the worst case for
// load balance), and expert-parallel rank j, holding experts [j E/ep, (j+1) E/ep), receives the sum
// of its experts' shares.
//
// Node-limited routing (DeepSeek-V3, arXiv 2412.19437 section 2.1.2): each token's top-k experts
// lie on at most M of the scale-up domains ("nodes") that the expert-parallel group spans. The
// report's gate picks the M nodes with the highest sums of their best experts' affinities, then
// the top-k experts on them. stepsim has no per-token affinities, only each rank's expected share
// of the tokens, so route_over_domains models the gate by expectation (docs/workloads.md,
// "Node-limited routing"):
//  - node choice: the M nodes are drawn one after the other without replacement, each with
//    probability proportional to its share W_n (the sum of its ranks' shares), so nodes with
//    popular experts are chosen more often (under uniform routing every M-subset is equally
//    likely);
//  - expert choice: the k experts are k independent picks among the ranks of the chosen set S,
//    rank j with probability share_j / W_S.
// Without a limit (M >= nodes) S is every node and rank j receives k x share_j copies, the
// unlimited model above. Under uniform routing over D nodes of equal size the limit leaves every
// rank's load unchanged and a node is reached with probability (M/D)(1 - (1 - 1/M)^k) instead of
// 1 - (1 - 1/D)^k.
#pragma once

#include <cstdint>
#include <vector>

namespace stepsim::workloads {

// Share of the routed tokens received by each of the `ep` ranks; they sum to 1.
std::vector<double> expert_rank_shares(std::int64_t experts, int ep, double skew);
// The same from a per-expert load table (model.moe.expert_load: non-negative, not all zero, one
// entry per expert): expert e receives load[e] / sum(load) of the tokens.
std::vector<double> expert_rank_shares(const std::vector<double>& load, int ep);

// An ep x ep matrix of bytes, row = sender's index in the expert group, column = receiver's:
// dispatch (transposed = false): every rank sends `send_bytes` x share[j] to rank j;
// combine (transposed = true): rank j returns them, so row j is send_bytes x share[j] everywhere.
std::vector<std::int64_t> expert_traffic_matrix(std::int64_t send_bytes,
                                                const std::vector<double>& shares, bool transposed);

// Where one token goes when experts are grouped by node (the model above).
struct DomainRouting {
  std::vector<double> rank_copies;   // expected copies of the token sent to each rank; sum top_k
  std::vector<double> domain_reach;  // probability that the token reaches each node
  // reached[c]: probability that the token reaches exactly c distinct nodes, c = 0..nodes.
  std::vector<double> reached;
};

// `shares`: each rank's share (expert_rank_shares); `rank_domain`: each rank's node, numbered
// 0..nodes-1; `max_domains`: M (0 or >= nodes: no limit). Requires every node to hold a rank and
// at most 64 nodes when the limit applies.
DomainRouting route_over_domains(const std::vector<double>& shares,
                                 const std::vector<int>& rank_domain, std::int64_t top_k,
                                 std::int64_t max_domains);

// The all-to-all of DeepSeek-V3's dispatch (arXiv 2412.19437 section 3.2.2), as one ep x ep
// matrix over the expert group: a token crosses the scale-out network once per node it reaches,
// to the rank of that node with the sender's in-node index, which forwards it over the scale-up
// network to every rank holding one of its experts. Row i, column j, for a sender of
// `token_bytes` x `tokens`:
//  - j on another node with i's in-node index: tokens x token_bytes x domain_reach[node(j)];
//  - j on i's node (j != i): nodes x tokens x token_bytes x rank_copies[j] (i forwards the tokens
//    of its own and of every other node's sender on its rail; each brings rank_copies[j] copies
//    per token on average);
//  - otherwise 0.
// Both legs start together: the forwarding is pipelined with the arrivals, as DeepEP forwards
// chunk by chunk. Combine (transposed = true) is the transpose: the expert outputs return to the
// relay over the scale-up network and cross the scale-out network once per node.
// Requires every node to hold the same number of the group's ranks.
std::vector<std::int64_t> relayed_traffic_matrix(std::int64_t tokens, std::int64_t token_bytes,
                                                 const DomainRouting& routing,
                                                 const std::vector<int>& rank_domain,
                                                 bool transposed);

}  // namespace stepsim::workloads
