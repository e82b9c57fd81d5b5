// `serve`: a serving scenario's prefill pass and decode step simulated (TTFT, TPOT, tokens/s and
// memory per accelerator; docs/serving.md), and with a TPOT limit the largest decode batch that
// meets it. The use behind `stepsim serve` and stepsim.serve().
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "sim/app/scenario_source.hpp"
#include "sim/output/atomic_output.hpp"
#include "sim/run/serve.hpp"

namespace stepsim::app {

struct ServeRequest {
  ScenarioSource scenario;
  std::string tpot;  // a time limit per output token ("50ms"); empty: none
  std::optional<std::filesystem::path> trace;  // write a Chrome trace of both passes here
  std::string trace_ranks = "auto";            // of each pool
  bool views = false;                          // fill ServeRun::views (for the HTML report)
  std::string view_ranks = "auto";
  output::OutputGuard* output_guard = nullptr;   // knows the trace's temporary file
  std::function<void(const std::string&)> note;  // messages for the user
  std::function<void()> before_runs;             // once the scenario is read and checked
};

struct ServeRun {
  ServeReport report;
  ServeViews views;  // when asked
};

// Reads the scenario and simulates its pools.
//   THROWS: InputError naming file, key and value for a bad scenario; naming --tpot for a limit
//           that is not a time above zero or a scenario without a decode pool.
ServeRun serve(const ServeRequest& request);

}  // namespace stepsim::app
