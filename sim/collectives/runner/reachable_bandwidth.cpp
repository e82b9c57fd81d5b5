#include "sim/collectives/runner/reachable_bandwidth.hpp"

#include <algorithm>

#include "sim/collectives/algorithms/algorithm_registry.hpp"
#include "sim/collectives/plan/group_shape.hpp"
#include "sim/collectives/runner/collective_session.hpp"
#include "sim/collectives/runner/link_calibration.hpp"
#include "sim/collectives/runner/placement.hpp"

namespace stepsim::collectives {
namespace {

using topology::GroupKind;
using topology::LinkIndex;
using topology::NodeId;
using topology::Topology;

// The accelerator that `node` is or belongs to (a die, a NIC), or an invalid id.
NodeId owner_of(const Topology& t, NodeId node) {
  return t.kind(node) == topology::NodeKind::kAccelerator ? node : t.node(node).owner;
}

// Bandwidth of the links leaving `accelerator` or a node it owns, for nodes it does not own, that
// `keep(link)` accepts.
template <class Keep>
BytesPerSecond egress(const Topology& t, NodeId accelerator, Keep keep) {
  double sum = 0.0;
  for (std::uint32_t v = 0; v < t.num_nodes(); ++v) {
    if (owner_of(t, NodeId(v)) != accelerator) continue;
    const Topology::LinkRange range = t.out_links(NodeId(v));
    for (std::uint32_t i = range.first; i < range.first + range.count; ++i) {
      const LinkIndex l(i);
      if (owner_of(t, t.target(l)) == accelerator || !keep(l)) continue;
      sum += t.bandwidth(l).value();
    }
  }
  return BytesPerSecond(sum);
}

BytesPerSecond busbw(CollectiveSession& session, const Algorithm& algorithm, CollectiveKind kind,
                     Bytes size, const Placement& placement, const PlanOptions& options) {
  Operation op;
  op.kind = kind;
  op.size = size;
  const Time t = session.run(algorithm, op, placement, options);
  return BytesPerSecond(size.as_double() / t.seconds() *
                        bus_bandwidth_factor(kind, placement.members.size()));
}

ReachCheck run_check(const Topology& t, std::string tier, const std::vector<std::uint32_t>& ranks,
                     BytesPerSecond reference, const ReachOptions& options) {
  ReachCheck check;
  check.tier = std::move(tier);
  check.ranks = static_cast<std::uint32_t>(ranks.size());
  check.per_accelerator = reference;
  const Calibration calibration = calibrated_presets();
  const auto registry = builtin_algorithms();
  const auto algorithm = registry.create("auto");
  const Placement placement = place_group(t, ranks);
  CollectiveSession session(t, calibration);
  check.allreduce_busbw = busbw(session, *algorithm, CollectiveKind::kAllReduce, options.size,
                                placement, calibration.plan_options());
  check.alltoall_busbw = busbw(session, *algorithm, CollectiveKind::kAllToAll, options.size,
                               placement, calibration.plan_options());
  return check;
}

}  // namespace

std::vector<ReachCheck> check_reachable(const Topology& t, const ReachOptions& options) {
  std::vector<ReachCheck> checks;
  const std::vector<NodeId>& accelerators = t.accelerators();
  // Scale-up: the first domain with two or more accelerators.
  std::vector<std::uint32_t> first_of_domain;  // rank of the first accelerator of each domain
  std::vector<char> domain_seen(t.groups().size(), 0);
  std::vector<std::vector<std::uint32_t>> domain_ranks(t.groups().size());
  for (std::uint32_t r = 0; r < accelerators.size(); ++r) {
    const auto g = t.group_of(accelerators[r], GroupKind::kScaleUp);
    if (!g) {
      first_of_domain.push_back(r);
      continue;
    }
    if (domain_seen[*g] == 0) first_of_domain.push_back(r);
    domain_seen[*g] = 1;
    domain_ranks[*g].push_back(r);
  }
  for (std::uint32_t g = 0; g < domain_ranks.size(); ++g) {
    std::vector<std::uint32_t> ranks = domain_ranks[g];
    if (ranks.size() < 2) continue;
    if (ranks.size() > options.max_ranks) ranks.resize(options.max_ranks);
    std::vector<char> in_group(t.num_nodes(), 0);
    for (const std::uint32_t r : ranks)
      in_group[accelerators[r].value()] = 1;
    BytesPerSecond reference = BytesPerSecond(0.0);
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      const BytesPerSecond b = egress(t, accelerators[ranks[i]], [&](LinkIndex l) {
        const NodeId to = t.target(l);
        if (t.kind(to) == topology::NodeKind::kSwitch)
          return t.group_of(to, GroupKind::kScaleUp) == g;
        const NodeId owner = owner_of(t, to);
        return owner.valid() && t.kind(to) != topology::NodeKind::kNic && in_group[owner.value()];
      });
      reference = i == 0 ? b : std::min(reference, b);
    }
    checks.push_back(run_check(t, "scale-up", ranks, reference, options));
    break;
  }
  // Scale-out: one accelerator per domain, through its NICs.
  std::vector<std::uint32_t> ranks;
  for (std::uint32_t r : first_of_domain)
    if (!t.nics(accelerators[r]).empty() && ranks.size() < options.max_ranks) ranks.push_back(r);
  if (ranks.size() >= 2) {
    BytesPerSecond reference = BytesPerSecond(0.0);
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      double sum = 0.0;
      const NodeId a = accelerators[ranks[i]];
      for (const topology::NicAttachment& nic : t.nics(a)) {
        const Topology::LinkRange range = t.out_links(nic.nic);
        for (std::uint32_t k = range.first; k < range.first + range.count; ++k)
          if (t.target(LinkIndex(k)) != a) sum += t.bandwidth(LinkIndex(k)).value();
      }
      reference = i == 0 ? BytesPerSecond(sum) : std::min(reference, BytesPerSecond(sum));
    }
    checks.push_back(run_check(t, "scale-out", ranks, reference, options));
  }
  return checks;
}

}  // namespace stepsim::collectives
