// What every `stepsim` subcommand is given, and how it is registered.
//
// A command adds its CLI11 subcommand and options in `add_*_command`, and returns the action to run
// when the user picked it. Actions print results to `out`, logs go through `log` (stderr), bad
// input is thrown as InputError (exit code 2) and anything else is an internal error (exit code 1).
#pragma once

#include <fmt/format.h>
#include <spdlog/logger.h>
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/common/input_error.hpp"
#include "sim/common/units.hpp"
#include "sim/output/atomic_output.hpp"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace stepsim::cli {

struct Context {
  std::ostream& out;
  std::ostream& err;
  spdlog::logger& log;
  bool err_is_terminal = false;  // progress lines only on a terminal
  // Every output file is written through output::AtomicFile or PendingFile with this guard, so
  // that an interrupted run leaves no partial file (null in tests run in-process).
  output::OutputGuard* output_guard = nullptr;
  double progress_after_s = 1.0;  // progress lines start after this much wall time (tests: 0)
  // Set by silence(): process 0 of an MPI launch reports this process's input errors (every
  // process agrees on the first one), so here they end the process with 0, not 2.
  bool errors_reported_elsewhere = false;
};

using Action = std::function<int(Context&)>;

struct Command {
  CLI::App* app;
  Action action;
};

// Adds the repeatable `-o key.path=value` option to `app`, collecting into `overrides`.
void add_override_option(CLI::App& app, std::vector<std::string>& overrides);

// Adds `--memory-with KEY=VALUE` (search: overrides for the memory rule alone) and returns it.
CLI::Option* add_memory_with_option(CLI::App& app, std::vector<std::string>& overrides);

// Adds `--max-memory SIZE` (the memory a simulation may use; default: the machine's;
// app::memory_limit reads it).
void add_max_memory_option(CLI::App& app, std::string& max_memory);
// For the processes of an MPI launch other than 0 (sim/search/distribution.hpp): nothing of this
// command reaches stdout or stderr, its logs and error messages included (process 0 says them).
void silence(Context& ctx);

// The commands. Each keeps its options alive in state captured by the returned action.
Command add_check_command(CLI::App& app);
Command add_topo_command(CLI::App& app);
Command add_run_command(CLI::App& app);
Command add_compare_command(CLI::App& app);
Command add_model_command(CLI::App& app);
Command add_collective_command(CLI::App& app);
Command add_traffic_command(CLI::App& app);
Command add_validate_command(CLI::App& app);
Command add_serve_command(CLI::App& app);
Command add_search_command(CLI::App& app);
Command add_kernels_command(CLI::App& app);

}  // namespace stepsim::cli
