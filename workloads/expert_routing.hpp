// How routed tokens spread over expert-parallel ranks. Uniform routing (skew 0) sends every rank
// the same share; with skew s > 0 expert e (0-based) receives tokens in proportion to
// (e + 1)^-s (a Zipf law; the most popular experts sit on the first ranks, the worst case for
// load balance), and expert-parallel rank j, holding experts [j E/ep, (j+1) E/ep), receives the sum
// of its experts' shares.
#pragma once

#include <cstdint>
#include <vector>

namespace stepsim::workloads {

// Share of the routed tokens received by each of the `ep` ranks; they sum to 1.
std::vector<double> expert_rank_shares(std::int64_t experts, int ep, double skew);

// An ep x ep matrix of bytes, row = sender's index in the expert group, column = receiver's:
// dispatch (transposed = false): every rank sends `send_bytes` x share[j] to rank j;
// combine (transposed = true): rank j returns them, so row j is send_bytes x share[j] everywhere.
std::vector<std::int64_t> expert_traffic_matrix(std::int64_t send_bytes,
                                                const std::vector<double>& shares, bool transposed);

}  // namespace stepsim::workloads
