// `stepsim collective --topology T --op OP --ranks N|LIST --algo NAME --sizes MIN:MAX`: the
// options of app::sweep_collective, its nccl-tests table (or `--json` rows) on stdout and its
// `--html` page.

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <ostream>

#include "sim/app/collective_sweep.hpp"
#include "sim/app/collective_writer.hpp"
#include "sim/cli/command.hpp"
#include "sim/cli/command_progress.hpp"
#include "sim/cli/network_flags.hpp"

namespace stepsim::cli {

// What the command line gave.
struct CollectiveOptions {
  app::CollectiveRequest request;
  bool json = false;
  std::string html;
  std::string published = "validation/cases.yaml";
  NetworkFlags network;  // --algo, --links, --proto...: the scenario's network keys
};

static int sweep(Context& ctx, const CollectiveOptions& o, const CLI::Option* sizes) {
  app::CollectiveRequest request = o.request;
  request.sizes_given = sizes->count() > 0;
  request.network = o.network.given();
  // A progress line on a terminal: the size being run, its share of its plan's
  // transfers done and the time left for it at the rate so far.
  ProgressLine progress(ctx);
  double started_s = 0.0;
  if (progress.enabled())
    request.progress = [&](const app::SweepProgress& p) {
      show_sweep_progress(progress, p, started_s);
    };
  // The HTML page starts before the runs, so a bad path fails at once.
  std::optional<output::AtomicFile> html_file;
  request.before_runs = [&] {
    if (!o.html.empty()) html_file.emplace(o.html, ctx.output_guard);
  };
  const app::CollectiveSweep sweep = app::sweep_collective(request);
  progress.clear();
  if (html_file) {
    const auto published = app::published_points(sweep, o.published);
    if (!published)
      ctx.log.info("--published '{}' does not exist: no published points on the page", o.published);
    app::write_collective_page(html_file->stream(), sweep,
                               published.value_or(std::vector<PublishedBusbw>{}));
    html_file->commit();
  }
  if (o.json)
    ctx.out << app::collective_json(sweep).dump(2) << "\n";
  else
    app::write_collective_table(ctx.out, sweep);
  return 0;
}

Command add_collective_command(CLI::App& app) {
  auto o = std::make_shared<CollectiveOptions>();
  app::CollectiveRequest& r = o->request;
  CLI::App* sub = app.add_subcommand("collective",
                                     "Time one collective over a range of "
                                     "sizes, like nccl-tests (algbw, busbw)");
  sub->add_option("--topology,-t", r.topology, "Topology: preset spec or YAML file")->required();
  sub->add_option("--op", r.op,
                  "allreduce, allgather, reducescatter, alltoall, alltoallv, "
                  "broadcast, reduce, "
                  "sendrecv")
      ->capture_default_str();
  sub->add_option("--ranks,-n", r.ranks,
                  "N (the first N accelerators), a list 0,2,4, ranges 0-7,16-23, or all")
      ->capture_default_str();
  o->network.add_algorithm(*sub);
  CLI::Option* sizes = sub->add_option("--sizes,-s", r.sizes,
                                       "MIN:MAX with units, doubling like nccl-tests -f 2 (or "
                                       "one size); at most 1PiB")
                           ->capture_default_str();
  o->network.add_collective(*sub);
  sub->add_option("--root", r.root, "Root rank (broadcast, reduce), index in the group")
      ->capture_default_str();
  sub->add_option("--matrix", r.matrix,
                  "alltoallv: CSV of n x n per-pair sizes (row = sender); with "
                  "--sizes, scaled "
                  "so that the largest row sum is each size");
  sub->add_option("--skew", r.skew,
                  "alltoallv: Zipf skew s >= 0; rank j receives a share ~ "
                  "(j+1)^-s of every "
                  "rank's buffer (0: uniform)");
  sub->add_flag("--json", o->json, "Print JSON rows instead of the table");
  add_max_memory_option(*sub, r.max_memory);
  CLI::Option* html = sub->add_option("--html", o->html,
                                      "Also write an HTML page plotting busbw against the size, "
                                      "with the published figures of --published that match")
                          ->type_name("FILE.html");
  sub->add_option("--published", o->published,
                  "Validation cases whose published busbw the HTML page "
                  "overlays (skipped when "
                  "the file does not exist)")
      ->capture_default_str()
      ->type_name("CASES.yaml")
      ->needs(html);
  return {sub, [o, sizes](Context& ctx) { return sweep(ctx, *o, sizes); }};
}

}  // namespace stepsim::cli
