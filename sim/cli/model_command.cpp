// `stepsim model NAME|FILE`: app::describe_model as text or `--json` (a model's shape, parameter
// count and FLOPs per token, as the workload generator sees them; docs/workloads.md). `--list`
// lists the presets.

#include <CLI/CLI.hpp>
#include <memory>
#include <ostream>

#include "sim/app/model_description.hpp"
#include "sim/app/model_writer.hpp"
#include "sim/cli/command.hpp"

namespace stepsim::cli {

Command add_model_command(CLI::App& app) {
  struct Options {
    std::string model;
    std::int64_t seq_len = 4096;
    bool list = false;
    bool json = false;
  };
  auto options = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand(
      "model",
      "Print a model's shape, parameter count and FLOPs per token (a preset or a YAML file)");
  sub->add_option("model", options->model, "Model preset name or model YAML file");
  sub->add_option("--seq-len", options->seq_len, "Sequence length for the attention FLOPs")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 24));
  sub->add_flag("--list", options->list, "List the model presets");
  sub->add_flag("--json", options->json, "Print JSON");
  return {sub, [options](Context& ctx) {
            if (options->list) {
              for (const std::string& line : app::model_presets())
                ctx.out << line << '\n';
              return 0;
            }
            const app::ModelDescription d = app::describe_model(options->model, options->seq_len);
            if (options->json)
              ctx.out << app::model_json(d).dump(2) << '\n';
            else
              app::write_model_text(ctx.out, d);
            return 0;
          }};
}

}  // namespace stepsim::cli
