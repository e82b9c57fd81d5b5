// Runs collectives one at a time on an otherwise idle network, as nccl-tests does: a simulator, a
// flow network of the topology with calibrated links, a router and a runner, kept together.
#pragma once

#include <memory>

#include "sim/collectives/algorithms/algorithm.hpp"
#include "sim/collectives/runner/collective_runner.hpp"
#include "sim/collectives/runner/link_calibration.hpp"

namespace stepsim::collectives {

class CollectiveSession {
 public:
  CollectiveSession(const topology::Topology& topology, const Calibration& calibration,
                    RunnerOptions options = {});
  ~CollectiveSession();

  // Runs `plan` alone and returns how long it took (start to last completion).
  Time run(std::shared_ptr<const Plan> plan, const Placement& placement);
  // Plans `op` with `algorithm` for the group at `placement` (plan_collective: with NCCL's
  // protocol model unless options.protocol is kOff) and runs it.
  Time run(const Algorithm& algorithm, const Operation& op, const Placement& placement,
           const PlanOptions& options);

  engine::Simulator& simulator() { return *sim_; }
  engine::FlowNetwork& network() { return *network_; }
  const NetworkLinks& links() const { return links_; }
  const topology::Topology& topology() const { return topology_; }

 private:
  const topology::Topology& topology_;
  std::unique_ptr<engine::Simulator> sim_;
  std::unique_ptr<engine::FlowNetwork> network_;
  std::unique_ptr<topology::Router> router_;
  NetworkLinks links_;
  std::unique_ptr<CollectiveRunner> runner_;
};

}  // namespace stepsim::collectives
