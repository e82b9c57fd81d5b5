#include "sim/app/step_run.hpp"

#include "sim/app/memory_guard.hpp"
#include "sim/run/simulate.hpp"
#include "sim/scenario/scenario.hpp"

namespace stepsim::app {

StepRun run_step(const StepRequest& request) {
  const Scenario scenario = load_training_scenario(request.scenario);
  const ResourceEstimate estimate = guard_step_memory(scenario.workload, request.max_memory);
  tell_estimate(estimate, request.note, request.detail);
  if (request.before_runs) request.before_runs(scenario);
  SimulateOptions simulate;
  simulate.output_guard = request.output_guard;
  simulate.trace = request.trace;
  simulate.trace_ranks = request.trace_ranks;
  simulate.note = request.note;
  simulate.progress = request.progress;
  StepRun run;
  if (request.view) {
    run.view.emplace();
    simulate.view = &*run.view;
    simulate.view_ranks = request.view_ranks;
  }
  run.report = simulate_step(scenario, simulate);
  return run;
}

}  // namespace stepsim::app
