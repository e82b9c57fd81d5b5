// Node-limited routing and the relayed dispatch (workloads/expert_routing.hpp) against closed
// forms. The layout is DeepSeek-V3's (arXiv 2412.19437 sections 2.1.2 and 3.2): 256 routed
// experts, top-8, expert parallelism 64 over 8 nodes of 8 GPUs, at most M = 4 nodes per token.
#include "workloads/expert_routing.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <string>

#include "sim/common/input_error.hpp"
#include "workload_of.hpp"
#include "workloads/step_generator.hpp"
#include "workloads/workload.hpp"

namespace stepsim::workloads {
namespace {

constexpr int kEp = 64;
constexpr int kNodes = 8;
constexpr std::int64_t kTopK = 8;

TEST(ExpertRouting, ALoadTableSetsEachRanksShare) {
  // 8 experts over ep 4 (2 each) with loads 1..8 (sum 36): rank j receives the loads of experts
  // 2j and 2j + 1, (4j + 3) / 36. A table of (e + 1)^-s gives routing_skew s's shares exactly.
  const std::vector<double> load = {1, 2, 3, 4, 5, 6, 7, 8};
  const std::vector<double> shares = expert_rank_shares(load, 4);
  ASSERT_EQ(shares.size(), 4u);
  for (int j = 0; j < 4; ++j)
    EXPECT_DOUBLE_EQ(shares[static_cast<std::size_t>(j)], (4.0 * j + 3) / 36) << j;
  std::vector<double> zipf;
  for (int e = 0; e < 8; ++e)
    zipf.push_back(std::pow(e + 1.0, -1.2));
  const std::vector<double> from_table = expert_rank_shares(zipf, 4);
  const std::vector<double> from_skew = expert_rank_shares(8, 4, 1.2);
  for (std::size_t j = 0; j < 4; ++j)
    EXPECT_DOUBLE_EQ(from_table[j], from_skew[j]) << j;
}

TEST(ExpertRouting, ALoadTableDrivesTheDispatchMatrix) {
  // model.moe.expert_load in place of routing_skew: the dispatch becomes an AllToAllv whose row
  // sends T k h bytes split as the table says (T = 1024 tokens, k = 2, h = 1024, 2 bytes), and
  // the combine is its transpose.
  const auto spec = workload_of(
      "{layers: 2, hidden: 1024, heads: 16, vocab: 32000, ffn: 4096,\n"
      " moe: {experts: 8, top_k: 2, expert_ffn: 2048, dense_layers: 1,\n"
      "       expert_load: [1, 2, 3, 4, 5, 6, 7, 8]}}",
      "{ep: 4, dp: 4}", "{seq_len: 1024, micro_batch: 1, global_batch: 4}");
  const Workload w(spec);
  const std::int64_t tkh_bytes = 1024LL * 2 * 1024 * 2;
  bool allv = false;
  for (const auto& op : w.program(0).ops)
    allv = allv || (op.name == OpName::kEpDispatch && op.collective == CollectiveKind::kAllToAllv);
  EXPECT_TRUE(allv);
  const auto& dispatch = w.traffic_matrix(0);
  ASSERT_EQ(dispatch.size(), 16u);
  for (int j = 0; j < 4; ++j) {
    EXPECT_EQ(dispatch[static_cast<std::size_t>(j)],
              std::llround(static_cast<double>(tkh_bytes) * (4.0 * j + 3) / 36))
        << j;
    EXPECT_EQ(w.traffic_matrix(1)[static_cast<std::size_t>(j * 4)],
              dispatch[static_cast<std::size_t>(j)]);
  }
}

std::vector<int> nodes_of_eight(int ranks) {
  std::vector<int> domain(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r)
    domain[static_cast<std::size_t>(r)] = r / 8;
  return domain;
}

double sum(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0);
}

TEST(NodeLimitedRouting, UniformTokenReachesAtMostMNodesWithTheClosedFormProbability) {
  const auto shares = expert_rank_shares(256, kEp, 0.0);
  const DomainRouting r = route_over_domains(shares, nodes_of_eight(kEp), kTopK, 4);
  // A node is in the chosen set with probability M/D = 1/2, and then reached by one of the 8
  // picks unless all land elsewhere among the 4 nodes: (M/D)(1 - (1 - 1/M)^k).
  const double reach = 0.5 * (1 - std::pow(0.75, 8));
  for (double p : r.domain_reach)
    EXPECT_NEAR(p, reach, 1e-12);
  // No token reaches a fifth node; the distribution sums to 1 and its mean is the sum of the
  // per-node probabilities (two independent computations of the same figure).
  ASSERT_EQ(r.reached.size(), 9u);
  for (std::size_t c = 5; c < r.reached.size(); ++c)
    EXPECT_EQ(r.reached[c], 0.0) << c << " nodes";
  EXPECT_NEAR(sum(r.reached), 1.0, 1e-12);
  double mean = 0;
  for (std::size_t c = 0; c < r.reached.size(); ++c)
    mean += static_cast<double>(c) * r.reached[c];
  EXPECT_NEAR(mean, sum(r.domain_reach), 1e-12);
  EXPECT_NEAR(mean, 8 * reach, 1e-12);  // 3.60 nodes per token
  // Every rank keeps its load, k/ep copies per token.
  for (double c : r.rank_copies)
    EXPECT_NEAR(c, 8.0 / 64.0, 1e-12);
}

TEST(NodeLimitedRouting, WithoutALimitATokenReachesNodesAsKIndependentPicks) {
  const auto shares = expert_rank_shares(256, kEp, 0.0);
  for (std::int64_t m : {0, 8, 12}) {
    const DomainRouting r = route_over_domains(shares, nodes_of_eight(kEp), kTopK, m);
    for (double p : r.domain_reach)
      EXPECT_NEAR(p, 1 - std::pow(7.0 / 8.0, 8), 1e-12);
    EXPECT_GT(r.reached[5], 0.1);  // 5 nodes and more happen
    EXPECT_NEAR(sum(r.reached), 1.0, 1e-12);
  }
}

TEST(NodeLimitedRouting, InfiniBandBytesOfTheRelayedDispatchDropByTheClosedFormRatio) {
  // With the relayed dispatch a token crosses InfiniBand once per remote node it reaches. Per
  // sender, the 7 remote nodes: limited 7 (M/D)(1 - (1 - 1/M)^k) = 3.150 crossings, unlimited
  // 7 (1 - (1 - 1/D)^k) = 4.595, direct dispatch k (D - 1)/D = 7 (one per remote expert).
  const auto shares = expert_rank_shares(256, kEp, 0.0);
  const auto domains = nodes_of_eight(kEp);
  const std::int64_t tokens = 4096;
  const std::int64_t token_bytes = 7168;  // hidden 7168 at 1 byte (FP8 dispatch)
  auto ib_bytes_of_rank0 = [&](std::int64_t m) {
    const auto matrix = relayed_traffic_matrix(
        tokens, token_bytes, route_over_domains(shares, domains, kTopK, m), domains, false);
    double ib = 0;
    for (int j = 8; j < kEp; ++j)
      ib += static_cast<double>(matrix[static_cast<std::size_t>(j)]);
    return ib;
  };
  const double per_token = static_cast<double>(tokens * token_bytes);
  const double limited = ib_bytes_of_rank0(4);
  const double unlimited = ib_bytes_of_rank0(0);
  EXPECT_NEAR(limited / per_token, 7 * 0.5 * (1 - std::pow(0.75, 8)), 1e-6);
  EXPECT_NEAR(unlimited / per_token, 7 * (1 - std::pow(0.875, 8)), 1e-6);
  EXPECT_NEAR(limited / unlimited, 0.5 * (1 - std::pow(0.75, 8)) / (1 - std::pow(0.875, 8)),
              1e-6);  // 0.686
  const auto direct = expert_traffic_matrix(tokens * kTopK * token_bytes, shares, false);
  double direct_ib = 0;
  for (int j = 8; j < kEp; ++j)
    direct_ib += static_cast<double>(direct[static_cast<std::size_t>(j)]);
  EXPECT_NEAR(direct_ib / per_token, 7.0, 1e-6);
}

TEST(NodeLimitedRouting, SkewFavoursThePopularNodesAndKeepsKCopiesPerToken) {
  // Zipf 1.2: node 0 holds the 32 most popular experts. The limit concentrates the load there
  // (the popular node is chosen more often, and its experts then share the picks with fewer
  // others), and still every token sends exactly k copies and reaches at most M nodes.
  const auto shares = expert_rank_shares(256, kEp, 1.2);
  const DomainRouting unlimited = route_over_domains(shares, nodes_of_eight(kEp), kTopK, 0);
  const DomainRouting limited = route_over_domains(shares, nodes_of_eight(kEp), kTopK, 4);
  EXPECT_NEAR(sum(limited.rank_copies), 8.0, 1e-9);
  for (std::size_t r = 0; r < shares.size(); ++r)
    EXPECT_NEAR(unlimited.rank_copies[r], 8.0 * shares[r], 1e-12);  // the unlimited model
  EXPECT_GT(limited.domain_reach[0], limited.domain_reach[7]);
  for (double p : limited.domain_reach)
    EXPECT_LE(p, 1.0);
  for (std::size_t c = 5; c < limited.reached.size(); ++c)
    EXPECT_EQ(limited.reached[c], 0.0);
  EXPECT_NEAR(sum(limited.reached), 1.0, 1e-12);
}

TEST(RelayedDispatch, EveryTokenCrossesOncePerNodeAndIsForwardedOverNvlink) {
  // Uniform routing, 8 nodes, no limit. Sender 0 (node 0, in-node index 0):
  //  - to rank 8n (node n, index 0): T b (1 - (7/8)^8) over InfiniBand, nothing to 8n + i, i > 0;
  //  - to ranks 1..7 (its node): D T b k/ep = 8 T b / 8 = T b over NVLink (its own tokens and
  //    those of the 7 senders of index 0 on the other nodes).
  const auto shares = expert_rank_shares(256, kEp, 0.0);
  const auto domains = nodes_of_eight(kEp);
  const DomainRouting routing = route_over_domains(shares, domains, kTopK, 0);
  const std::int64_t t = 1000;
  const std::int64_t b = 100;
  const auto dispatch = relayed_traffic_matrix(t, b, routing, domains, false);
  const auto combine = relayed_traffic_matrix(t, b, routing, domains, true);
  const auto ib = static_cast<std::int64_t>(std::llround(t * b * (1 - std::pow(7.0 / 8, 8))));
  for (int j = 0; j < kEp; ++j) {
    const std::int64_t expected = j == 0 ? 0 : j < 8 ? t * b : j % 8 == 0 ? ib : 0;
    EXPECT_EQ(dispatch[static_cast<std::size_t>(j)], expected) << "rank 0 -> " << j;
  }
  for (int i = 0; i < kEp; ++i)
    for (int j = 0; j < kEp; ++j)
      EXPECT_EQ(combine[static_cast<std::size_t>(j * kEp + i)],
                dispatch[static_cast<std::size_t>(i * kEp + j)]);
}

const char* kV3Slice =
    "{preset: deepseek-v3, layers: 2, moe: {dense_layers: 1, max_nodes_per_token: 4, "
    "dispatch: relayed}}";

TEST(RelayedDispatch, WorkloadUsesTheRelayedMatricesOnTheScaleUpDomains) {
  WorkloadSpec spec =
      workload_of(kV3Slice, "{dp: 128, ep: 64, zero: 1}",
                  "{seq_len: 4096, micro_batch: 1, global_batch: 128, precision: bf16}");
  spec.rank_domains = nodes_of_eight(128);
  validate_layout(spec, 128);
  const Workload w(spec);
  const auto& dispatch = w.traffic_matrix(0);
  ASSERT_EQ(dispatch.size(), std::size_t{kEp} * kEp);
  const double tb = 4096.0 * 7168 * 2;
  EXPECT_NEAR(static_cast<double>(dispatch[8]), tb * 0.5 * (1 - std::pow(0.75, 8)), 1.0);
  EXPECT_EQ(dispatch[9], 0);
  EXPECT_NEAR(static_cast<double>(dispatch[1]), tb, 1.0);
  for (const Op& op : w.program(0).ops) {
    if (op.name == OpName::kEpDispatch || op.name == OpName::kEpCombine) {
      EXPECT_EQ(op.collective, CollectiveKind::kAllToAllv);
    }
  }
}

TEST(RelayedDispatch, BadKeysAndLayoutsAreInputErrors) {
  EXPECT_THROW(workload_of("{preset: deepseek-v3, moe: {dispatch: pxn}}", "{dp: 64, ep: 64}",
                           "{seq_len: 4096, global_batch: 64}"),
               InputError);
  EXPECT_THROW(workload_of("{preset: deepseek-v3, moe: {max_nodes_per_token: -1}}",
                           "{dp: 64, ep: 64}", "{seq_len: 4096, global_batch: 64}"),
               InputError);
  // ep 12 over nodes of 8: one group has 8 + 4 ranks on its nodes, the next 4 + 8.
  WorkloadSpec spec = workload_of(
      "{preset: deepseek-v3, layers: 2, moe: {experts: 24, dense_layers: 1, "
      "max_nodes_per_token: 1}}",
      "{dp: 24, ep: 12}", "{seq_len: 4096, global_batch: 24}");
  spec.rank_domains = nodes_of_eight(24);
  EXPECT_THROW(validate_layout(spec, 24), InputError);
}

}  // namespace
}  // namespace stepsim::workloads
