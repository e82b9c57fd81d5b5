#include "sim/collectives/runner/collective_session.hpp"

#include "sim/collectives/algorithms/planned_collective.hpp"

#include <stdexcept>

namespace stepsim::collectives {

CollectiveSession::CollectiveSession(const topology::Topology& topology,
                                     const Calibration& calibration, RunnerOptions options)
    : topology_(topology),
      sim_(std::make_unique<engine::Simulator>()),
      network_(std::make_unique<engine::FlowNetwork>(*sim_)),
      router_(std::make_unique<topology::Router>(topology)),
      links_(add_topology_links(*network_, topology, calibration)),
      runner_(std::make_unique<CollectiveRunner>(*sim_, *network_, topology, *router_, links_,
                                                 options)) {}

// The runner and the network schedule on the simulator: they go before it.
CollectiveSession::~CollectiveSession() {
  runner_.reset();
  network_.reset();
}

Time CollectiveSession::run(std::shared_ptr<const Plan> plan, const Placement& placement) {
  const Time start = sim_->now();
  Time finish = start;
  bool done = false;
  runner_->start(std::move(plan), placement, [&](Time t) {
    finish = t;
    done = true;
  });
  sim_->run();
  if (!done) throw std::logic_error("collective did not complete: a plan dependency stalled (bug)");
  return finish - start;
}

Time CollectiveSession::run(const Algorithm& algorithm, const Operation& op,
                            const Placement& placement, const PlanOptions& options) {
  const GroupShape shape = group_shape(topology_, placement);
  return run(std::make_shared<const Plan>(plan_collective(algorithm, op, shape, options).plan),
             placement);
}

}  // namespace stepsim::collectives
