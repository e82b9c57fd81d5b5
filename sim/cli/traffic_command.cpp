// `stepsim traffic --topology T --pattern permutation|alltoall|incast|ring` or `--flows FILE.csv`:
// the options of app::run_traffic, and its summary (or `--json`: every flow and every link that
// carried bytes) on stdout.

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <memory>
#include <ostream>

#include "sim/app/traffic_run.hpp"
#include "sim/app/traffic_writer.hpp"
#include "sim/cli/command.hpp"
#include "sim/cli/network_flags.hpp"
#include "sim/cli/progress_line.hpp"

namespace stepsim::cli {

Command add_traffic_command(CLI::App& app) {
  struct Options {
    app::TrafficRequest request;
    std::size_t top = 10;
    bool json = false;
    NetworkFlags network;  // --links, --ecmp, --idle-tolerance: the scenario's network keys
  };
  auto o = std::make_shared<Options>();
  app::TrafficRequest& r = o->request;
  CLI::App* sub = app.add_subcommand(
      "traffic", "Run point-to-point traffic with contention: completion times, link utilization");
  sub->add_option("--topology,-t", r.topology, "Topology: preset spec or YAML file")->required();
  auto* pattern = sub->add_option("--pattern,-p", r.pattern,
                                  "permutation, alltoall, incast or ring over --ranks");
  auto* flows = sub->add_option("--flows,-f", r.flows_file,
                                "CSV file with columns src,dst,bytes,start (topology node names)");
  pattern->excludes(flows);
  sub->add_option("--ranks,-n", r.ranks, "Accelerators for --pattern: N, list, ranges, all")
      ->capture_default_str();
  sub->add_option("--bytes,-b", r.bytes, "Bytes per flow for --pattern")->capture_default_str();
  sub->add_option("--seed", r.seed, "Seed of the random permutation")->capture_default_str();
  o->network.add_traffic(*sub);
  sub->add_option("--top", o->top, "Links to list, busiest first")->capture_default_str();
  o->network.add_idle_tolerance(*sub);
  sub->add_flag("--json", o->json, "Print JSON (every flow and every used link)");
  add_max_memory_option(*sub, r.max_memory);
  return {sub, [o](Context& ctx) {
            app::TrafficRequest request = o->request;
            request.network = o->network.given();
            ProgressLine progress(ctx);
            if (progress.enabled())
              request.progress = [&progress](std::size_t finished, std::size_t all) {
                if (!progress.due()) return;
                progress.show_done(
                    fmt::format("simulating: {} of {} flows finished", finished, all),
                    static_cast<double>(finished) / static_cast<double>(all));
              };
            const app::TrafficRun run = app::run_traffic(request);
            progress.clear();
            if (o->json)
              ctx.out << app::traffic_json(run).dump(2) << "\n";
            else
              app::write_traffic_summary(ctx.out, run, o->top);
            return 0;
          }};
}

}  // namespace stepsim::cli
