// `stepsim serve SCENARIO`: simulates one prefill pass and one decode step of a serving scenario
// and prints TTFT, TPOT, tokens/s per accelerator and memory per accelerator (docs/serving.md);
// --tpot LIMIT finds the largest decode batch that meets LIMIT; --report writes the JSON, --trace
// a Chrome trace of both passes and --html a report with charts, as `stepsim run` does.

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <ostream>

#include "sim/app/serving_run.hpp"
#include "sim/cli/command.hpp"
#include "sim/common/input_error.hpp"
#include "sim/run/html_report.hpp"
#include "sim/run/serve.hpp"

namespace stepsim::cli {

Command add_serve_command(CLI::App& app) {
  struct Options {
    std::string file;
    std::vector<std::string> overrides;
    std::string report;
    std::string tpot;
    std::string trace;
    std::string trace_ranks = "auto";
    std::string html;
    std::string html_ranks = "auto";
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
  CLI::Option* trace =
      sub->add_option("--trace", options->trace,
                      "Write a Chrome trace of the prefill pass and the decode step (open in "
                      "Perfetto); .json.gz compresses it")
          ->type_name("FILE.json[.gz]");
  sub->add_option("--trace-ranks", options->trace_ranks,
                  "Ranks of each pool in the trace: auto (all up to 64 ranks, else whole "
                  "replicas up to 64 ranks), all, N (the first N), or a list like 0-7,64")
      ->type_name("RANKS")
      ->needs(trace);
  CLI::Option* html =
      sub->add_option("--html", options->html,
                      "Write a self-contained HTML report with charts (timelines, time of rank "
                      "0, links, memory)")
          ->type_name("FILE.html");
  sub->add_option("--html-ranks", options->html_ranks,
                  "Ranks of each pool on the HTML report's timelines: auto (rank 0), all, N, or a "
                  "list like 0-7,64")
      ->type_name("RANKS")
      ->needs(html);
  return {sub, [options](Context& ctx) {
            app::ServeRequest request;
            request.scenario.file = options->file;
            request.scenario.overrides = options->overrides;
            request.tpot = options->tpot;
            if (!options->trace.empty()) request.trace = options->trace;
            request.trace_ranks = options->trace_ranks;
            request.views = !options->html.empty();
            request.view_ranks = options->html_ranks;
            request.output_guard = ctx.output_guard;
            request.note = [&ctx](const std::string& note) { ctx.log.info("{}", note); };
            // The outputs start before the simulations (a bad path fails at once) and are renamed
            // into place when complete.
            std::optional<output::AtomicFile> report_file;
            std::optional<output::AtomicFile> html_file;
            request.before_runs = [&] {
              if (!options->report.empty()) report_file.emplace(options->report, ctx.output_guard);
              if (!options->html.empty()) html_file.emplace(options->html, ctx.output_guard);
            };
            const app::ServeRun run = app::serve(request);
            print_serve_summary(ctx.out, run.report);
            if (report_file) {
              report_file->stream() << to_json(run.report).dump(2) << '\n';
              report_file->commit();
            }
            if (html_file) {
              write_serve_html(html_file->stream(), run.report, run.views);
              html_file->commit();
            }
            ctx.out.flush();
            return 0;
          }};
}

}  // namespace stepsim::cli
