#include "workloads/expert_routing.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <stdexcept>

namespace stepsim::workloads {

std::vector<double> expert_rank_shares(std::int64_t experts, int ep, double skew) {
  std::vector<double> weight(static_cast<std::size_t>(experts));
  for (std::int64_t e = 0; e < experts; ++e)
    weight[static_cast<std::size_t>(e)] = std::pow(static_cast<double>(e + 1), -skew);
  return expert_rank_shares(weight, ep);
}

std::vector<double> expert_rank_shares(const std::vector<double>& load, int ep) {
  double total = 0;
  for (const double w : load)
    total += w;
  std::vector<double> shares(static_cast<std::size_t>(ep), 0.0);
  const std::size_t per_rank = load.size() / static_cast<std::size_t>(ep);
  for (std::size_t e = 0; e < load.size(); ++e)
    shares[e / per_rank] += load[e] / total;
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

namespace {

int domain_count(const std::vector<int>& rank_domain) {
  int domains = 0;
  for (int d : rank_domain) {
    if (d < 0) throw std::logic_error("route_over_domains: negative node index");
    domains = std::max(domains, d + 1);
  }
  return domains;
}

// The chosen node sets with their probabilities: M nodes drawn one after the other without
// replacement, each with probability proportional to its weight. Keyed by bit mask, so that the
// sum below runs in a fixed order.
void draw_nodes(const std::vector<double>& weight, int left, std::uint64_t mask, double prob,
                std::map<std::uint64_t, double>& sets) {
  double remaining = 0;
  for (std::size_t d = 0; d < weight.size(); ++d)
    if ((mask >> d & 1u) == 0) remaining += weight[d];
  if (left == 0 || remaining <= 0) {
    sets[mask] += prob;
    return;
  }
  for (std::size_t d = 0; d < weight.size(); ++d) {
    if ((mask >> d & 1u) != 0 || weight[d] <= 0) continue;
    draw_nodes(weight, left - 1, mask | (std::uint64_t{1} << d), prob * weight[d] / remaining,
               sets);
  }
}

// Distribution of the number of distinct nodes reached by k independent picks, node d with
// probability q[d]: a sum over how many picks each node gets (multinomial), counting the nodes
// with at least one.
std::vector<double> distinct_count(const std::vector<double>& q, std::int64_t k) {
  const auto K = static_cast<std::size_t>(k);
  // f[j][c]: sum over the nodes so far of prod q^m / m!, with j picks used and c nodes reached.
  std::vector<std::vector<double>> f(K + 1, std::vector<double>(q.size() + 1, 0.0));
  f[0][0] = 1.0;
  for (const double qd : q) {
    std::vector<std::vector<double>> g(K + 1, std::vector<double>(q.size() + 1, 0.0));
    for (std::size_t j = 0; j <= K; ++j)
      for (std::size_t c = 0; c <= q.size(); ++c) {
        if (f[j][c] == 0) continue;
        double term = f[j][c];  // m = 0
        g[j][c] += term;
        for (std::size_t m = 1; j + m <= K; ++m) {
          term *= qd / static_cast<double>(m);
          g[j + m][c + 1] += term;
        }
      }
    f = std::move(g);
  }
  double factorial = 1;
  for (std::size_t i = 2; i <= K; ++i)
    factorial *= static_cast<double>(i);
  std::vector<double> p(q.size() + 1);
  for (std::size_t c = 0; c <= q.size(); ++c)
    p[c] = f[K][c] * factorial;
  return p;
}

}  // namespace

DomainRouting route_over_domains(const std::vector<double>& shares,
                                 const std::vector<int>& rank_domain, std::int64_t top_k,
                                 std::int64_t max_domains) {
  if (shares.size() != rank_domain.size())
    throw std::logic_error("route_over_domains: one node per rank");
  const int domains = domain_count(rank_domain);
  std::vector<double> weight(static_cast<std::size_t>(domains), 0.0);
  std::vector<int> ranks_in(static_cast<std::size_t>(domains), 0);
  for (std::size_t r = 0; r < shares.size(); ++r) {
    weight[static_cast<std::size_t>(rank_domain[r])] += shares[r];
    ++ranks_in[static_cast<std::size_t>(rank_domain[r])];
  }
  if (std::find(ranks_in.begin(), ranks_in.end(), 0) != ranks_in.end())
    throw std::logic_error("route_over_domains: a node holds no rank");

  std::map<std::uint64_t, double> sets;
  const bool limited = max_domains > 0 && max_domains < domains;
  std::vector<std::vector<int>> set_members;
  std::vector<double> set_prob;
  if (limited) {
    if (domains > 64) throw std::logic_error("route_over_domains: more than 64 nodes");
    draw_nodes(weight, static_cast<int>(max_domains), 0, 1.0, sets);
    for (const auto& [mask, prob] : sets) {
      std::vector<int> members;
      for (int d = 0; d < domains; ++d)
        if ((mask >> d & 1u) != 0) members.push_back(d);
      set_members.push_back(std::move(members));
      set_prob.push_back(prob);
    }
  } else {
    std::vector<int> all(static_cast<std::size_t>(domains));
    for (int d = 0; d < domains; ++d)
      all[static_cast<std::size_t>(d)] = d;
    set_members.push_back(std::move(all));
    set_prob.push_back(1.0);
  }

  DomainRouting out;
  out.rank_copies.assign(shares.size(), 0.0);
  out.domain_reach.assign(static_cast<std::size_t>(domains), 0.0);
  out.reached.assign(static_cast<std::size_t>(domains) + 1, 0.0);
  const auto k = static_cast<double>(top_k);
  for (std::size_t s = 0; s < set_members.size(); ++s) {
    const std::vector<int>& set = set_members[s];
    const double prob = set_prob[s];
    double set_weight = 0;
    for (int d : set)
      set_weight += weight[static_cast<std::size_t>(d)];
    if (set_weight <= 0) continue;
    std::vector<bool> in_set(static_cast<std::size_t>(domains), false);
    std::vector<double> q;
    for (int d : set) {
      in_set[static_cast<std::size_t>(d)] = true;
      const double qd = weight[static_cast<std::size_t>(d)] / set_weight;
      q.push_back(qd);
      out.domain_reach[static_cast<std::size_t>(d)] +=
          prob * (1.0 - std::pow(1.0 - qd, static_cast<double>(top_k)));
    }
    for (std::size_t r = 0; r < shares.size(); ++r)
      if (in_set[static_cast<std::size_t>(rank_domain[r])])
        out.rank_copies[r] += prob * k * shares[r] / set_weight;
    const std::vector<double> count = distinct_count(q, top_k);
    for (std::size_t c = 0; c < count.size(); ++c)
      out.reached[c] += prob * count[c];
  }
  return out;
}

std::vector<std::int64_t> relayed_traffic_matrix(std::int64_t tokens, std::int64_t token_bytes,
                                                 const DomainRouting& routing,
                                                 const std::vector<int>& rank_domain,
                                                 bool transposed) {
  const std::size_t n = rank_domain.size();
  const int domains = domain_count(rank_domain);
  // In-node index: the rank's position among the group's ranks on its node.
  std::vector<int> local(n, 0);
  std::vector<int> seen(static_cast<std::size_t>(domains), 0);
  for (std::size_t r = 0; r < n; ++r)
    local[r] = seen[static_cast<std::size_t>(rank_domain[r])]++;
  if (std::adjacent_find(seen.begin(), seen.end(), std::not_equal_to<>()) != seen.end())
    throw std::logic_error("relayed_traffic_matrix: nodes hold different numbers of ranks");
  const double per_sender = static_cast<double>(tokens) * static_cast<double>(token_bytes);
  std::vector<std::int64_t> m(n * n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      double bytes = 0;
      if (rank_domain[i] != rank_domain[j]) {
        if (local[i] == local[j])
          bytes = per_sender * routing.domain_reach[static_cast<std::size_t>(rank_domain[j])];
      } else if (i != j) {
        bytes = static_cast<double>(domains) * per_sender * routing.rank_copies[j];
      }
      m[transposed ? j * n + i : i * n + j] = std::llround(bytes);
    }
  }
  return m;
}

}  // namespace stepsim::workloads
