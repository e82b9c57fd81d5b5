// `run_step`: one training step of a scenario simulated, with its report and, when asked, its
// Chrome trace and what the HTML report shows. The use behind `stepsim run` and stepsim.run().
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "sim/app/scenario_source.hpp"
#include "sim/output/atomic_output.hpp"
#include "sim/run/step_report.hpp"
#include "sim/run/step_view.hpp"

namespace stepsim::app {

struct StepRequest {
  ScenarioSource scenario;
  std::string max_memory;                      // see memory_limit(); empty: the machine's
  std::optional<std::filesystem::path> trace;  // write a Chrome trace here
  std::string trace_ranks = "auto";
  bool view = false;  // fill StepRun::view (for the HTML report)
  std::string view_ranks = "auto";
  output::OutputGuard* output_guard = nullptr;  // knows the trace's temporary file
  // Messages for the user: `note` always (which ranks a trace shows, a large step's estimate),
  // `detail` for the curious (-v).
  std::function<void(const std::string&)> note;
  std::function<void(const std::string&)> detail;
  // (operations done, total) now and then, when set.
  std::function<void(std::uint64_t, std::uint64_t)> progress;
  // Once the scenario is read and checked, before the simulation.
  std::function<void(const Scenario&)> before_runs;
};

struct StepRun {
  StepReport report;
  std::optional<StepView> view;  // when asked
};

// Reads the scenario, refuses a step too large for the memory allowed, and simulates it.
//   THROWS: InputError naming file, key and value for a bad scenario, or with the estimate for a
//           step that needs more memory than allowed.
StepRun run_step(const StepRequest& request);

}  // namespace stepsim::app
