// `stepsim serve SCENARIO`: simulates one prefill pass and one decode step of a serving scenario
// and prints TTFT, TPOT, tokens/s per accelerator and memory per accelerator (docs/serving.md);
// --tpot LIMIT finds the largest decode batch that meets LIMIT; --report writes the JSON.

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <ostream>

#include "sim/cli/command.hpp"
#include "sim/common/input_error.hpp"
#include "sim/run/serve.hpp"
#include "sim/scenario/serving_scenario.hpp"

namespace stepsim::cli {

Command add_serve_command(CLI::App& app) {
  struct Options {
    std::string file;
    std::vector<std::string> overrides;
    std::string report;
    std::string tpot;
  };
  auto options = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand(
      "serve", "Simulate a serving scenario's prefill pass and decode step (TTFT, TPOT, memory)");
  sub->add_option("scenario", options->file, "Serving scenario YAML file (docs/serving.md)")
      ->required();
  add_override_option(*sub, options->overrides);
  sub->add_option("--report", options->report, "Write the JSON report here")
      ->type_name("FILE.json");
  sub->add_option("--tpot", options->tpot,
                  "Find the largest decode batch whose time per output token meets this limit "
                  "(e.g. 50ms)")
      ->type_name("TIME");
  return {sub, [options](Context& ctx) {
            std::optional<Time> limit;
            if (!options->tpot.empty()) {
              limit = option_value("--tpot", options->tpot, parse_time);
              if (*limit <= Time::zero())
                throw InputError(fmt::format("--tpot '{}': a time above zero", options->tpot));
            }
            const ServingScenario scenario =
                load_serving_scenario(options->file, options->overrides);
            if (limit && !scenario.serving.decode)
              throw InputError(fmt::format(
                  "--tpot needs a decode pool: {} has no serving.decode section", options->file));
            std::optional<output::AtomicFile> report_file;
            if (!options->report.empty()) report_file.emplace(options->report, ctx.output_guard);
            const ServeReport report = make_serve_report(scenario, limit);
            print_serve_summary(ctx.out, report);
            if (report_file) {
              report_file->stream() << to_json(report).dump(2) << '\n';
              report_file->commit();
            }
            ctx.out.flush();
            return 0;
          }};
}

}  // namespace stepsim::cli
