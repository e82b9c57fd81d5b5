#include "workloads/expert_routing.hpp"

#include <cmath>

namespace stepsim::workloads {

std::vector<double> expert_rank_shares(std::int64_t experts, int ep, double skew) {
  std::vector<double> weight(static_cast<std::size_t>(experts));
  double total = 0;
  for (std::int64_t e = 0; e < experts; ++e) {
    weight[static_cast<std::size_t>(e)] = std::pow(static_cast<double>(e + 1), -skew);
    total += weight[static_cast<std::size_t>(e)];
  }
  std::vector<double> shares(static_cast<std::size_t>(ep), 0.0);
  const std::int64_t per_rank = experts / ep;
  for (std::int64_t e = 0; e < experts; ++e) {
    shares[static_cast<std::size_t>(e / per_rank)] += weight[static_cast<std::size_t>(e)] / total;
  }
  return shares;
}

std::vector<std::int64_t> expert_traffic_matrix(std::int64_t send_bytes,
                                                const std::vector<double>& shares,
                                                bool transposed) {
  const std::size_t n = shares.size();
  std::vector<std::int64_t> m(n * n);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      const double share = transposed ? shares[i] : shares[j];
      m[i * n + j] = std::llround(static_cast<double>(send_bytes) * share);
    }
  }
  return m;
}

}  // namespace stepsim::workloads
