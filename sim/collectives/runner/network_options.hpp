// How the collectives of a simulation become flows: the `network:` section of a scenario, which
// the executor takes as it is (docs/collectives.md, "The scenario's network: section").
#pragma once

#include <string>

#include "sim/collectives/plan/plan_options.hpp"
#include "sim/collectives/runner/collective_runner.hpp"
#include "sim/collectives/runner/link_calibration.hpp"

namespace stepsim::collectives {

struct NetworkOptions {
  std::string algorithm = "auto";  // a collectives registry name
  bool calibrated = true;          // calibrated link presets, or line rate
  Calibration calibration = calibrated_presets();
  PlanOptions plan = calibration.plan_options();  // latencies, chunking, channels, PXN
  RunnerOptions runner;                           // ECMP mode
  // engine::FlowNetworkOptions::idle_tolerance: 0 is exact max-min; a small fraction (0.05)
  // defers re-solves after departures, for large all-to-all heavy runs (docs/collectives.md).
  double idle_tolerance = 0.0;
};

}  // namespace stepsim::collectives
