// `stepsim search SCENARIO`: the options of app::search, the fastest layouts on stdout and the
// CSV, JSON and best scenario files (docs/search.md).

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <ostream>

#include "sim/app/layout_search_run.hpp"
#include "sim/cli/command.hpp"
#include "sim/cli/command_progress.hpp"
#include "sim/search/distribution.hpp"
#include "sim/search/search_output.hpp"

namespace stepsim::cli {

// What the command line gave.
struct SearchCommandOptions {
  app::SearchRequest request;  // the scenario's file and overrides aside
  std::string file;
  std::vector<std::string> overrides;
  std::size_t top = 10;
  std::string csv;
  std::string json;
  std::string write_best;
};

static int search_scenario(Context& ctx, const SearchCommandOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  app::SearchRequest request = options.request;
  request.scenario = {options.file, {}, {}, options.overrides};
  // Under an MPI launcher every process searches and process 0 alone writes (the
  // others' logs and messages are silenced; docs/search.md).
  const auto distribution = search::make_distribution();
  if (!distribution->writes_output()) silence(ctx);
  request.distribution = distribution.get();
  SearchProgressLine progress(
      ctx, started,
      distribution->threads(request.jobs) * static_cast<unsigned>(distribution->processes()));
  request.progress = [&progress](const search::SearchProgress& p) { progress.show(p); };
  // Output files start before the search, so a bad path fails at once.
  std::optional<output::AtomicFile> csv_file, json_file, best_file;
  request.before_runs = [&] {
    if (!options.csv.empty()) csv_file.emplace(options.csv, ctx.output_guard);
    if (!options.json.empty()) json_file.emplace(options.json, ctx.output_guard);
    if (!options.write_best.empty()) best_file.emplace(options.write_best, ctx.output_guard);
  };
  const app::SearchRun run = app::search(request);
  if (!run.has_results) return 0;
  progress.clear();
  search::print_search(ctx.out, run.outcome, options.top);
  ctx.out.flush();
  if (csv_file) {
    search::write_csv(csv_file->stream(), run.outcome);
    csv_file->commit();
  }
  if (json_file) {
    json_file->stream() << search::to_json(run.outcome).dump(2) << '\n';
    json_file->commit();
  }
  if (best_file) {
    search::write_scenario_yaml(best_file->stream(), run.scenario, run.outcome.ranked.front());
    best_file->commit();
  }
  const double wall = progress.elapsed_s();
  const char* s = run.threads == 1 ? "" : "s";
  if (run.processes > 1)
    ctx.log.info("searched in {:.1f} s of wall time on {} MPI processes of {} thread{}", wall,
                 run.processes, run.threads, s);
  else
    ctx.log.info("searched in {:.1f} s of wall time on {} thread{}", wall, run.threads, s);
  return 0;
}

Command add_search_command(CLI::App& app) {
  auto options = std::make_shared<SearchCommandOptions>();
  CLI::App* sub = app.add_subcommand(
      "search", "Search the fastest parallel layout of a scenario's model on its cluster");
  sub->add_option("scenario", options->file, "Scenario YAML file")->required();
  add_override_option(*sub, options->overrides);
  sub->add_option("--space", options->request.spaces,
                  "The values to try: a YAML file of KEY: [V1, V2] or KEY=V1,V2 (repeatable; keys "
                  "tp, sp, tp_comm_overlap, cp, cp_mode, pp, vpp, schedule, dp, ep, zero, "
                  "micro_batch, recompute, grad_bucket, order)")
      ->type_name("FILE.yaml|KEY=V1,V2");
  sub->add_option("--memory-margin", options->request.memory_margin,
                  "Fraction of the device's memory a layout must leave free (default 0)")
      ->type_name("FRACTION")
      ->check(CLI::Range(0.0, 0.9));
  sub->add_option("-j,--jobs", options->request.jobs,
                  "Simulations at once in each process (default: the machine's cores, "
                  "shared among the MPI processes on it)")
      ->type_name("N")
      ->check(CLI::Range(1u, 1024u));
  sub->add_option("--top", options->top, "Layouts in the table (default 10)")
      ->type_name("K")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 30));
  sub->add_option("--csv", options->csv, "Write every simulated layout as CSV")
      ->type_name("FILE.csv");
  sub->add_option("--json", options->json, "Write the search as JSON")->type_name("FILE.json");
  sub->add_option("--write-best", options->write_best,
                  "Write the fastest layout as a scenario file that stepsim run takes")
      ->type_name("FILE.yaml");
  add_memory_with_option(*sub, options->request.memory_overrides);
  add_max_memory_option(*sub, options->request.max_memory);
  return {sub, [options](Context& ctx) { return search_scenario(ctx, *options); }};
}

}  // namespace stepsim::cli
