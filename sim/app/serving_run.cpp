#include "sim/app/serving_run.hpp"

#include <fmt/format.h>

#include "sim/common/input_error.hpp"
#include "sim/scenario/serving_scenario.hpp"

namespace stepsim::app {
namespace {

std::optional<Time> tpot_limit(const std::string& text) {
  if (text.empty()) return std::nullopt;
  Time limit;
  try {
    limit = parse_time(text);
  } catch (const InputError& e) {
    throw InputError(fmt::format("--tpot '{}': {}", text, e.what()));
  }
  if (limit <= Time::zero()) throw InputError(fmt::format("--tpot '{}': a time above zero", text));
  return limit;
}

}  // namespace

ServeRun serve(const ServeRequest& request) {
  const std::optional<Time> limit = tpot_limit(request.tpot);
  const ServingScenario scenario = load_serving_scenario(request.scenario);
  if (limit && !scenario.serving.decode)
    throw InputError(fmt::format("--tpot needs a decode pool: {} has no serving.decode section",
                                 request.scenario.name()));
  if (request.before_runs) request.before_runs();
  ServeRecording recording;
  recording.trace = request.trace;
  recording.trace_ranks = request.trace_ranks;
  recording.output_guard = request.output_guard;
  recording.views = request.views;
  recording.view_ranks = request.view_ranks;
  recording.note = request.note;
  ServeRun run;
  run.report = make_serve_report(scenario, limit, recording, &run.views);
  return run;
}

}  // namespace stepsim::app
