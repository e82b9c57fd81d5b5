// The interface every collective algorithm implements: turn an operation on a group into a plan.
// Algorithms are chosen by name from an AlgorithmRegistry; none knows the topology, only the
// group's shape.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "sim/collectives/plan/group_shape.hpp"
#include "sim/collectives/plan/operation.hpp"
#include "sim/collectives/plan/plan.hpp"
#include "sim/collectives/plan/plan_options.hpp"

namespace stepsim::collectives {

class Algorithm {
 public:
  virtual ~Algorithm() = default;
  virtual std::string_view name() const = 0;
  // Why the algorithm cannot run `op` on `group` (for the user's error message); nullopt if it can.
  virtual std::optional<std::string> unsupported(const Operation& op,
                                                 const GroupShape& group) const = 0;
  // The plan; requires !unsupported(op, group) (throws InputError with that reason otherwise).
  virtual Plan plan(const Operation& op, const GroupShape& group,
                    const PlanOptions& options) const = 0;
  // The algorithm that really builds the plan (differs only for `auto`).
  virtual std::string_view resolve(const Operation&, const GroupShape&) const { return name(); }
  // The same when planned with `options`: `auto` chooses by NCCL's tuner when the protocol model
  // is on (options.protocol != kOff), and by its rules otherwise.
  virtual std::string_view resolve(const Operation& op, const GroupShape& group,
                                   const PlanOptions&) const {
    return resolve(op, group);
  }
};

}  // namespace stepsim::collectives
