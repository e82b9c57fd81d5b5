// `stepsim check SCENARIO`: app::check, and what the scenario resolved to on stdout (the topology,
// the model with its parameter count, the layout and batch, and the memory per rank of every
// pipeline stage against the accelerator's capacity). No simulation runs.

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "sim/app/scenario_check.hpp"
#include "sim/cli/command.hpp"

namespace stepsim::cli {

Command add_check_command(CLI::App& app) {
  struct Options {
    std::string file;
    std::vector<std::string> overrides;
  };
  auto options = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand("check", "Validate a scenario file without running it");
  sub->add_option("scenario", options->file, "Scenario YAML file")->required();
  add_override_option(*sub, options->overrides);
  return {sub, [options](Context& ctx) {
            const Scenario scenario = app::check({options->file, {}, {}, options->overrides});
            app::write_check_summary(ctx.out, options->file, scenario);
            return 0;
          }};
}

}  // namespace stepsim::cli
