// `stepsim compare`: the options of app::compare (scenarios, or one under several topologies or
// override sets), its table on stdout and its JSON, CSV and HTML files.

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <ostream>

#include "sim/app/comparison.hpp"
#include "sim/app/comparison_writer.hpp"
#include "sim/cli/command.hpp"
#include "sim/cli/command_progress.hpp"
#include "sim/search/distribution.hpp"

namespace stepsim::cli {

// What the command line gave.
struct CompareOptions {
  app::CompareRequest request;  // the scenarios aside
  std::vector<std::string> files;
  std::vector<std::string> overrides;
  std::string json;
  std::string csv;
  std::string html;
};

static int compare_scenarios(Context& ctx, const CompareOptions& options) {
  app::CompareRequest request = options.request;
  for (const auto& f : options.files)
    request.scenarios.push_back({f, {}, {}, options.overrides});
  // Under an MPI launcher every process loads the variants, the simulations are shared
  // among the processes, and process 0 alone writes (sim/search/distribution.hpp).
  const auto distribution = search::make_distribution();
  if (!distribution->writes_output()) silence(ctx);
  request.distribution = distribution.get();
  request.note = [&ctx](const std::string& note) { ctx.log.info("{}", note); };
  request.detail = [&ctx](const std::string& note) { ctx.log.debug("{}", note); };
  ProgressLine progress(ctx);
  double started_s = 0.0;
  if (progress.enabled())
    request.progress = [&](const app::CompareProgress& p) {
      show_compare_progress(progress, p, started_s);
    };
  // The output files start before the runs (a bad path fails at once).
  std::optional<output::AtomicFile> json_file, csv_file, html_file;
  request.before_runs = [&] {
    if (!options.json.empty()) json_file.emplace(options.json, ctx.output_guard);
    if (!options.csv.empty()) csv_file.emplace(options.csv, ctx.output_guard);
    if (!options.html.empty()) html_file.emplace(options.html, ctx.output_guard);
  };
  const app::Comparison comparison = app::compare(request);
  progress.clear();
  if (!comparison.has_results) return 0;
  app::write_comparison_table(ctx.out, comparison);
  ctx.out.flush();
  if (json_file) {
    json_file->stream() << app::comparison_json(comparison).dump(2) << '\n';
    json_file->commit();
  }
  if (csv_file) {
    app::write_comparison_csv(csv_file->stream(), comparison);
    csv_file->commit();
  }
  if (html_file) {
    app::write_comparison_page(html_file->stream(), comparison);
    html_file->commit();
  }
  return 0;
}

Command add_compare_command(CLI::App& app) {
  auto options = std::make_shared<CompareOptions>();
  CLI::App* sub = app.add_subcommand(
      "compare",
      "Simulate several scenarios, or one under several topologies or overrides, side by side");
  sub->add_option("scenarios", options->files, "Scenario YAML files")->required();
  add_override_option(*sub, options->overrides);
  sub->add_option("--topology", options->request.topologies,
                  "Run the (single) scenario on this topology too (repeatable)")
      ->type_name("SPEC");
  sub->add_option("--variant", options->request.variants,
                  "Run the (single) scenario with these overrides, e.g. \"parallelism.tp=4 "
                  "parallelism.pp=2\" (repeatable)")
      ->type_name("\"K=V ...\"");
  sub->add_option("--json", options->json, "Write the table as JSON")->type_name("FILE.json");
  sub->add_option("--csv", options->csv, "Write the table as CSV")->type_name("FILE.csv");
  sub->add_option("--html", options->html,
                  "Write a self-contained HTML page of charts, the variants side by side")
      ->type_name("FILE.html");
  add_max_memory_option(*sub, options->request.max_memory);
  CLI::Option* search =
      sub->add_flag("--search", options->request.search,
                    "Search the fastest layout of each scenario or variant (as stepsim search) "
                    "and compare the best of each");
  sub->add_option("--space", options->request.spaces,
                  "With --search: the values to try, as for stepsim search (repeatable)")
      ->type_name("FILE.yaml|KEY=V1,V2")
      ->needs(search);
  add_memory_with_option(*sub, options->request.memory_overrides)->needs(search);
  sub->add_option("-j,--jobs", options->request.jobs,
                  "With --search: simulations at once in each process (default: the "
                  "machine's cores, shared among the MPI processes on it)")
      ->type_name("N")
      ->check(CLI::Range(1u, 1024u))
      ->needs(search);

  return {sub, [options](Context& ctx) { return compare_scenarios(ctx, *options); }};
}

}  // namespace stepsim::cli
