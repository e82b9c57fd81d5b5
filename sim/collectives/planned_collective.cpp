#include "sim/collectives/planned_collective.hpp"

#include <fmt/format.h>

#include "sim/collectives/nccl_tuner.hpp"
#include "sim/common/input_error.hpp"

namespace stepsim::collectives {

std::optional<NcclAlgorithm> nccl_algorithm_of(std::string_view name) {
  if (name == "ring" || name == "ring-fluid" || name == "hierarchical" ||
      name == "hierarchical-pipelined")
    return NcclAlgorithm::kRing;
  if (name == "tree") return NcclAlgorithm::kTree;
  if (name == "in-switch") return NcclAlgorithm::kNvls;
  if (name == "nvls-tree") return NcclAlgorithm::kNvlsTree;
  return std::nullopt;
}

PlannedCollective plan_collective(const Algorithm& algorithm, const Operation& op,
                                  const GroupShape& group, const PlanOptions& options) {
  const std::string name(algorithm.resolve(op, group, options));
  const auto nccl = nccl_algorithm_of(name);
  if (options.protocol == ProtocolChoice::kOff || !nccl)
    return {algorithm.plan(op, group, options), name};
  const auto forced = forced_protocol(options.protocol);
  Protocol protocol = forced.value_or(Protocol::kSimple);
  if (forced && !nccl_supports(*nccl, *forced))
    throw InputError(fmt::format("protocol {} does not run with {} (NCCL runs {} with Simple only)",
                                 to_string(*forced), name, to_string(*nccl)));
  if (!forced) {
    const NcclAlgorithm candidates[] = {*nccl};
    // NCCL's tuner for this algorithm; where its model has no entry for the operation (the ring
    // standing in for a two-level form, say), the protocol it would use on a ring.
    auto choice = nccl_choose(op, group, candidates);
    if (!choice) {
      const NcclAlgorithm ring[] = {NcclAlgorithm::kRing};
      choice = nccl_choose(op, group, ring);
    }
    if (choice) protocol = choice->protocol;
  }
  Plan plan = algorithm.plan(op, group, nccl_plan_options(options, *nccl, protocol, group));
  plan.set_protocol(protocol);
  return {std::move(plan), fmt::format("{}/{}", name, to_string(protocol))};
}

}  // namespace stepsim::collectives
