#include "sim/cli/cli.hpp"

#include <fmt/format.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>
#include <algorithm>
#include <exception>
#include <memory>
#include <optional>
#include <ostream>

#include "sim/cli/command.hpp"
#include "sim/common/config.hpp"
#include "sim/common/input_error.hpp"
#include "sim/common/units.hpp"
#include "stepsim/version.hpp"

namespace stepsim::cli {
namespace {

constexpr const char* kDescription =
    "stepsim simulates one training step of a large language model on a cluster: the topology, the "
    "model and the parallel layout come from YAML, and stepsim reports how long the step takes and "
    "where the time goes.";

// The first argument that gives a flag of the program or of a command a value other than the
// `true` CLI11 accepts ("--verbose=4").
const std::string* flag_given_a_value(CLI::App& app, const std::vector<std::string>& args) {
  std::vector<CLI::App*> apps = app.get_subcommands({});
  apps.push_back(&app);
  for (const std::string& arg : args) {
    const auto eq = arg.find('=');
    if (!arg.starts_with('-') || eq == std::string::npos || arg.substr(eq + 1) == "true") continue;
    for (CLI::App* a : apps) {
      const CLI::Option* option = a->get_option_no_throw(arg.substr(0, eq));
      if (option != nullptr && option->get_expected_max() == 0) return &arg;
    }
  }
  return nullptr;
}

// Says so on `err` and returns true when the first word that is not an option names no command.
bool refuse_unknown_command(CLI::App& app, const std::vector<std::string>& args,
                            std::ostream& err) {
  for (const auto& arg : args) {
    if (arg.empty() || arg.front() == '-') continue;
    std::vector<std::string> names;
    for (const auto* sub : app.get_subcommands({}))
      names.push_back(sub->get_name());
    if (std::find(names.begin(), names.end(), arg) != names.end()) break;
    const std::string suggestion = config::closest_match(arg, names);
    err << "stepsim: error: unknown command '" << arg << "'"
        << (suggestion.empty() ? "" : "; did you mean '" + suggestion + "'?")
        << "\nRun 'stepsim --help' for the list of commands.\n";
    return true;
  }
  return false;
}

// Parses `args` into `app`. Returns the exit code when the program ends here (help, version or a
// command line CLI11 refuses, with its message on `err`), nothing when a command is to run.
std::optional<int> parse(CLI::App& app, const std::vector<std::string>& args, std::ostream& out,
                         std::ostream& err) {
  // CLI11 wants argv-style input, last argument first.
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
    return std::nullopt;
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e, out, err);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e, out, err);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e, out, err);
  } catch (const CLI::ArgumentMismatch& e) {
    // CLI11 says "verbose was given a disallowed flag override": name the argument instead.
    if (const std::string* arg = flag_given_a_value(app, args)) {
      err << "stepsim: error: " << arg->substr(0, arg->find('='))
          << " is a flag and takes no value, got '" << *arg
          << "' (repeat it to count: -vv)\nRun with --help for more information.\n";
      return 2;
    }
    app.exit(e, out, err);
    return 2;
  } catch (const CLI::ParseError& e) {
    app.exit(e, out, err);
    return 2;
  } catch (const std::exception& e) {
    // A conversion inside CLI11 that throws a standard exception instead of its own (a bad
    // command line, whatever CLI11 calls it: nothing has run yet).
    err << "stepsim: error: cannot read the command line: " << e.what()
        << "\nRun with --help for more information.\n";
    return 2;
  }
}

// Runs the command's action: its exit code, or 2 for bad input and 1 for a bug, with the message.
int run_action(Command& command, Context& context) {
  std::ostream& out = context.out;
  std::ostream& err = context.err;
  try {
    return command.action(context);
  } catch (const InputError& e) {
    out.flush();
    err << "stepsim: error: " << e.what() << "\n";
    return context.errors_reported_elsewhere ? 0 : 2;
  } catch (const std::exception& e) {
    out.flush();
    err << "stepsim: internal error: " << e.what()
        << "\n(this is a bug in stepsim; please report it with the command that caused it)\n";
    return 1;
  }
}

}  // namespace

void add_override_option(CLI::App& app, std::vector<std::string>& overrides) {
  app.add_option("-o,--override", overrides,
                 "Override one value of the scenario, KEY.PATH=VALUE (repeatable), for example "
                 "-o parallelism.tp=8")
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false);
}

CLI::Option* add_memory_with_option(CLI::App& app, std::vector<std::string>& overrides) {
  return app
      .add_option("--memory-with", overrides,
                  "Check each layout's memory with this override too, KEY.PATH=VALUE (repeatable): "
                  "the whole model when the scenario simulates a slice, e.g. model.layers=61")
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false);
}

void add_max_memory_option(CLI::App& app, std::string& max_memory) {
  app.add_option("--max-memory", max_memory,
                 "Refuse a simulation estimated to need more memory than this (default: the "
                 "machine's physical memory), e.g. 8GiB")
      ->type_name("SIZE");
}

void silence(Context& ctx) {
  ctx.log.set_level(spdlog::level::off);
  // A stream with badbit set writes nothing; main's error messages go through ctx.err too.
  ctx.out.setstate(std::ios::badbit);
  ctx.err.setstate(std::ios::badbit);
  // Open MPI's launcher ends the whole job as soon as one process exits with a status other than
  // 0: a process that exited 2 here before process 0 had printed the message they agreed on took
  // the message with it (mpirun exited 2 with no error printed; seen under load in
  // tests/search/mpi_search.sh). Exiting 0 leaves process 0 to print and to give the job its 2.
  ctx.errors_reported_elsewhere = true;
}

int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
        const Environment& environment) {
  CLI::App app(kDescription, "stepsim");
  app.set_version_flag("--version", std::string("stepsim ") + kVersion);
  app.require_subcommand(1);
  app.fallthrough();
  // A flag takes no value: CLI11 2.1 reads `--verbose=N` with std::stoll and lets an out-of-range
  // N escape as std::out_of_range (found by fuzz_cli), reads `--quiet=-5` as false and `--json=2`
  // as true. `--flag=true` stays accepted. Subcommands inherit this default.
  app.option_defaults()->disable_flag_override();
  int verbosity = 0;
  bool quiet = false;
  app.add_flag("-v,--verbose", verbosity, "More log output on stderr (-vv for trace)");
  app.add_flag("-q,--quiet", quiet, "Only errors on stderr");

  std::vector<Command> commands;
  commands.push_back(add_run_command(app));
  commands.push_back(add_compare_command(app));
  commands.push_back(add_check_command(app));
  commands.push_back(add_topo_command(app));
  commands.push_back(add_model_command(app));
  commands.push_back(add_kernels_command(app));
  commands.push_back(add_collective_command(app));
  commands.push_back(add_traffic_command(app));
  commands.push_back(add_validate_command(app));
  commands.push_back(add_serve_command(app));
  commands.push_back(add_search_command(app));

  // An unknown command would otherwise read as "a subcommand is required"; name it instead.
  if (refuse_unknown_command(app, args, err)) return 2;

  if (const std::optional<int> code = parse(app, args, out, err)) return *code;

  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(err);
  sink->set_pattern("stepsim: %^%l%$: %v");
  spdlog::logger log("stepsim", sink);
  log.set_level(quiet            ? spdlog::level::err
                : verbosity >= 2 ? spdlog::level::trace
                : verbosity == 1 ? spdlog::level::debug
                                 : spdlog::level::info);
  Context context{out,
                  err,
                  log,
                  environment.err_is_terminal,
                  environment.output_guard,
                  environment.progress_after_s};

  for (auto& command : commands) {
    if (command.app->parsed()) return run_action(command, context);
  }
  return 2;  // unreachable: require_subcommand(1) guarantees one was parsed
}

}  // namespace stepsim::cli
