// `stepsim run SCENARIO`: the options of app::run_step, the summary of where the time goes on
// stdout, and optionally the JSON report, a Chrome trace and the HTML report.

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <ostream>

#include <spdlog/spdlog.h>

#include "sim/app/step_run.hpp"
#include "sim/cli/command.hpp"
#include "sim/cli/progress_line.hpp"
#include "sim/common/input_error.hpp"
#include "sim/run/html_report.hpp"
#include "sim/scenario/scenario.hpp"

namespace stepsim::cli {

namespace {

struct Options {
  std::string file;
  std::vector<std::string> overrides;
  std::string report;
  std::string trace;
  std::string trace_ranks = "auto";
  std::string max_memory;
  std::string html;
  std::string html_ranks = "auto";
};

int run_scenario(Context& ctx, const Options& options) {
  const auto started = std::chrono::steady_clock::now();
  app::StepRequest request;
  request.scenario.file = options.file;
  request.scenario.overrides = options.overrides;
  request.max_memory = options.max_memory;
  if (!options.trace.empty()) request.trace = options.trace;
  request.trace_ranks = options.trace_ranks;
  request.view = !options.html.empty();
  request.view_ranks = options.html_ranks;
  request.output_guard = ctx.output_guard;
  request.note = [&ctx](const std::string& note) { ctx.log.info("{}", note); };
  request.detail = [&ctx](const std::string& note) { ctx.log.debug("{}", note); };
  // Start the report's file before the simulation, so a bad path fails at once; it is
  // renamed into place when complete, and an earlier report stays until then.
  std::optional<output::AtomicFile> report_file;
  std::optional<output::AtomicFile> html_file;
  request.before_runs = [&](const Scenario& scenario) {
    if (!options.report.empty()) report_file.emplace(options.report, ctx.output_guard);
    if (!options.html.empty()) html_file.emplace(options.html, ctx.output_guard);
    ctx.log.debug("scenario '{}' loaded: {} accelerators", scenario.name,
                  scenario.topology.accelerators().size());
  };
  // A progress line on stderr when it is a terminal (never on stdout, never with -q),
  // once the run has taken ctx.progress_after, with the time left at the rate so far.
  ProgressLine progress(ctx);
  if (progress.enabled()) {
    request.progress = [&progress](std::uint64_t done, std::uint64_t total) {
      if (done == 0 || !progress.due()) return;
      const double fraction = static_cast<double>(done) / static_cast<double>(total);
      progress.show_done(
          fmt::format("simulating: {:.0f}% of {} operations", 100.0 * fraction, total), fraction);
    };
  }
  const app::StepRun run = app::run_step(request);
  progress.clear();
  print_summary(ctx.out, run.report);
  if (report_file) {
    report_file->stream() << to_json(run.report).dump(2) << '\n';
    report_file->commit();
  }
  if (html_file) {
    write_step_html(html_file->stream(), run.report, *run.view);
    html_file->commit();
  }
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ctx.out.flush();
  ctx.log.debug("simulated in {:.2f} s of wall time", wall);
  return 0;
}

}  // namespace

Command add_run_command(CLI::App& app) {
  auto options = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand("run", "Simulate one training step of a scenario");
  sub->add_option("scenario", options->file, "Scenario YAML file")->required();
  add_override_option(*sub, options->overrides);
  sub->add_option("--report", options->report, "Write the JSON report here (docs/report-schema.md)")
      ->type_name("FILE.json");
  CLI::Option* trace =
      sub->add_option("--trace", options->trace,
                      "Write a Chrome trace (open in Perfetto); .json.gz compresses it")
          ->type_name("FILE.json[.gz]");
  sub->add_option("--trace-ranks", options->trace_ranks,
                  "Ranks in the trace: auto (all up to 64 ranks, else whole data-parallel "
                  "replicas up to 64 ranks), all, N (the first N), or a list like 0-7,64")
      ->type_name("RANKS")
      ->needs(trace);  // without a trace it would be ignored, unchecked
  CLI::Option* html =
      sub->add_option("--html", options->html,
                      "Write a self-contained HTML report with charts (timeline, time per stage, "
                      "links, traffic, memory)")
          ->type_name("FILE.html");
  sub->add_option("--html-ranks", options->html_ranks,
                  "Ranks on the HTML report's timeline: auto (the first rank of each pipeline "
                  "stage, at most 16), all, N, or a list like 0-7,64")
      ->type_name("RANKS")
      ->needs(html);
  add_max_memory_option(*sub, options->max_memory);
  return {sub, [options](Context& ctx) { return run_scenario(ctx, *options); }};
}

}  // namespace stepsim::cli
