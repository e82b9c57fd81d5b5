#include "workloads/step_generator.hpp"

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "workloads/expert_path.hpp"
#include "workloads/expert_routing.hpp"
#include "workloads/rank_map.hpp"
#include "workloads/stage_pass_walker.hpp"

namespace stepsim::workloads {

Program generate_stage_program(const WorkloadSpec& spec, int stage) {
  if (stage < 0 || stage >= spec.parallel.pp) throw std::logic_error("stage out of range");
  const auto& p = spec.parallel;
  if ((p.zero == 1 || p.zero == 2) && spec.training.overlap_param_gather && p.dp * p.cp > 1) {
    StagePassWalker first(spec, stage);
    first.run();
    StagePassWalker second(spec, stage);
    second.gather_at_start(first.closed_buckets());
    return second.run();
  }
  return StagePassWalker(spec, stage).run();
}

Program generate_forward_program(const WorkloadSpec& spec, const ForwardPass& pass) {
  if (spec.parallel.pp != 1 || spec.parallel.vpp != 1)
    throw std::logic_error("generate_forward_program needs a single-stage layout");
  return StagePassWalker(spec, pass).run_forward();
}

std::vector<std::vector<std::int64_t>> expert_traffic_matrices(const WorkloadSpec& spec) {
  const auto& p = spec.parallel;
  const auto& m = spec.model;
  if (!m.moe_enabled || p.ep == 1) return {};
  const bool relayed = m.moe.dispatch == ExpertDispatch::kRelayed;
  const bool skewed = skewed_expert_load(spec) && m.moe.capacity_factor <= 0;
  if (!skewed && !relayed) return {};
  const std::int64_t tokens =
      spec.training.micro_batch * spec.training.seq_len / p.cp / (p.sequence_parallel() ? p.tp : 1);
  const std::int64_t token_bytes = m.hidden * element_bytes(spec.training.precision);
  const std::int64_t send = tokens * m.moe.top_k * token_bytes;
  std::vector<double> shares =
      m.moe.expert_load.empty()
          ? expert_rank_shares(m.moe.experts, p.ep, spec.training.routing_skew)
          : expert_rank_shares(m.moe.expert_load, p.ep);
  if (m.moe.max_nodes_per_token == 0 && !relayed) {
    return {expert_traffic_matrix(send, shares, false), expert_traffic_matrix(send, shares, true)};
  }
  const std::vector<int> domains =
      expert_group_domains(RankMap(p), spec.rank_domains, spec.parallelism_location);
  const DomainRouting routing =
      route_over_domains(shares, domains, m.moe.top_k, m.moe.max_nodes_per_token);
  if (!relayed) {
    for (std::size_t r = 0; r < shares.size(); ++r)
      shares[r] = routing.rank_copies[r] / static_cast<double>(m.moe.top_k);
    return {expert_traffic_matrix(send, shares, false), expert_traffic_matrix(send, shares, true)};
  }
  return {relayed_traffic_matrix(tokens, token_bytes, routing, domains, false),
          relayed_traffic_matrix(tokens, token_bytes, routing, domains, true)};
}

}  // namespace stepsim::workloads
