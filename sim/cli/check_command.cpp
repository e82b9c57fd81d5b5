// `stepsim check SCENARIO`: validates a scenario completely and prints what it resolved to.

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <memory>
#include <ostream>

#include "sim/cli/command.hpp"
#include "sim/scenario/scenario.hpp"

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
            const Scenario scenario = load_scenario(options->file, options->overrides);
            ctx.out << fmt::format("{}: valid scenario '{}'", options->file, scenario.name);
            ctx.out << fmt::format(" ({} file{} read)\n", scenario.document.files().size(),
                                   scenario.document.files().size() == 1 ? "" : "s");
            return 0;
          }};
}

}  // namespace stepsim::cli
