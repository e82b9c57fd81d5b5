// `stepsim traffic --topology T --pattern permutation|alltoall|incast|ring` or `--flows FILE.csv`:
// runs point-to-point flows with contention on the calibrated flow network and reports flow
// completion times and link utilization; `--json` lists every flow (start_s, finish_s) and every
// link that carried bytes (utilization over the run).

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>

#include "sim/cli/command.hpp"
#include "sim/cli/progress_line.hpp"
#include "sim/collectives/runner/placement.hpp"
#include "sim/collectives/runner/traffic.hpp"
#include "sim/common/input_error.hpp"
#include "sim/engine/flow_network.hpp"
#include "topology/load_topology.hpp"

namespace stepsim::cli {
namespace {

// Memory per flow of `--pattern alltoall` (its traffic entry, route, flow state and outcome),
// measured with GNU time's peak resident size less the topology's: `stepsim traffic -t
// dgx-h100-superpod:nodes=N -p alltoall -b 1MiB` took 22.3 MB at 128 ranks (16,256 flows),
// 68.7 MB at 256 (65,280) and 256.2 MB at 512 (261,632), 880-960 bytes a flow; rounded up
// (docs/reliability.md).
constexpr double kBytesPerTrafficFlow = 1000;

// An all-to-all pattern has n(n-1) flows, the one pattern that grows with the square of the
// ranks: refused before a single flow is made when they need more memory than allowed.
void guard_traffic(const std::string& pattern, std::size_t n, const std::string& max_memory) {
  if (pattern == "alltoall")
    guard_all_to_all("--pattern alltoall", "flows", n, kBytesPerTrafficFlow, max_memory);
}

}  // namespace

Command add_traffic_command(CLI::App& app) {
  struct Options {
    std::string topology;
    std::string pattern;
    std::string flows;
    std::string ranks = "all";
    std::string bytes = "64MiB";
    std::string links = "calibrated";
    std::string ecmp = "fabric";
    std::uint64_t seed = 1;
    std::size_t top = 10;
    double idle_tolerance = 0.0;
    bool json = false;
    std::string max_memory;
  };
  auto options = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand(
      "traffic", "Run point-to-point traffic with contention: completion times, link utilization");
  sub->add_option("--topology,-t", options->topology, "Topology: preset spec or YAML file")
      ->required();
  auto* pattern = sub->add_option("--pattern,-p", options->pattern,
                                  "permutation, alltoall, incast or ring over --ranks");
  auto* flows = sub->add_option("--flows,-f", options->flows,
                                "CSV file with columns src,dst,bytes,start (topology node names)");
  pattern->excludes(flows);
  sub->add_option("--ranks,-n", options->ranks, "Accelerators for --pattern: N, list, ranges, all")
      ->capture_default_str();
  sub->add_option("--bytes,-b", options->bytes, "Bytes per flow for --pattern")
      ->capture_default_str();
  sub->add_option("--seed", options->seed, "Seed of the random permutation")->capture_default_str();
  sub->add_option("--links", options->links, "calibrated or line-rate")->capture_default_str();
  sub->add_option("--ecmp", options->ecmp,
                  "fabric (as the topology's link classes say), hash (one path per flow), spray "
                  "(spread packet by packet over every link) or spread (one flow per path)")
      ->capture_default_str();
  sub->add_option("--top", options->top, "Links to list, busiest first")->capture_default_str();
  sub->add_option("--idle-tolerance", options->idle_tolerance,
                  "Defer re-solves after departures while saturated links stay within this "
                  "idle fraction (0: exact max-min; 0.05 for large all-to-alls)")
      ->check(CLI::Range(0.0, engine::kMaxIdleTolerance))
      ->capture_default_str();
  sub->add_flag("--json", options->json, "Print JSON (every flow and every used link)");
  add_max_memory_option(*sub, options->max_memory);
  return {
      sub, [options](Context& ctx) {
        using namespace stepsim::collectives;
        if (std::isnan(options->idle_tolerance))  // CLI::Range lets NaN through
          throw InputError("--idle-tolerance 'nan': expected a number from 0 to 0.5");
        if (options->pattern.empty() == options->flows.empty())
          throw InputError("give either --pattern NAME or --flows FILE.csv");
        if (options->links != "calibrated" && options->links != "line-rate")
          throw InputError(
              fmt::format("--links '{}': expected 'calibrated' or 'line-rate'", options->links));
        if (!topology::parse_ecmp_mode(options->ecmp))
          throw InputError(fmt::format(
              "--ecmp '{}': expected 'fabric', 'hash', 'spray' or 'spread'", options->ecmp));
        const topology::Topology topo =
            topology::load_topology_spec(options->topology, std::filesystem::current_path());
        std::vector<TrafficFlow> traffic;
        if (!options->flows.empty()) {
          traffic = read_flows_csv(options->flows, topo);
        } else {
          const auto ranks =
              parse_ranks(options->ranks, static_cast<std::uint32_t>(topo.accelerators().size()));
          guard_traffic(options->pattern, ranks.size(), options->max_memory);
          traffic =
              traffic_pattern(options->pattern, topo, ranks,
                              option_value("--bytes", options->bytes, parse_bytes), options->seed);
        }
        const Calibration calibration =
            options->links == "calibrated" ? calibrated_presets() : line_rate_presets();
        TrafficResult result;
        ProgressLine progress(ctx);
        const auto show = [&progress](std::size_t finished, std::size_t all) {
          if (!progress.due()) return;
          progress.show_done(fmt::format("simulating: {} of {} flows finished", finished, all),
                             static_cast<double>(finished) / static_cast<double>(all));
        };
        try {
          result = run_traffic(topo, calibration, traffic,
                               *topology::parse_ecmp_mode(options->ecmp), options->idle_tolerance,
                               progress.enabled() ? std::function(show) : nullptr);
          progress.clear();
        } catch (const InputError& e) {  // flows too large for the clock: say whose
          throw InputError(fmt::format(
              "{}: {}", options->flows.empty() ? "--pattern " + options->pattern : options->flows,
              e.what()));
        }

        if (options->json) {
          nlohmann::json j;
          j["topology"] = topo.name();
          j["makespan_s"] = result.makespan.seconds();
          nlohmann::json fl = nlohmann::json::array();
          for (std::size_t i = 0; i < traffic.size(); ++i)
            fl.push_back({{"src", topo.name(traffic[i].src)},
                          {"dst", topo.name(traffic[i].dst)},
                          {"bytes", traffic[i].bytes.count()},
                          {"start_s", result.flows[i].start.seconds()},
                          {"finish_s", result.flows[i].finish.seconds()}});
          j["flows"] = fl;
          nlohmann::json li = nlohmann::json::array();
          for (const LinkOutcome& l : result.links)
            li.push_back({{"link", topo.describe(l.link)},
                          {"bandwidth_GBps", l.bandwidth.gigabytes_per_second()},
                          {"bytes", l.bytes_carried},
                          {"utilization", l.utilization},
                          {"busy_s", l.busy.seconds()},
                          {"peak_flows", l.peak_flows}});
          j["links"] = li;
          ctx.out << j.dump(2) << "\n";
          return 0;
        }
        std::vector<double> fct;
        double total = 0;
        for (std::size_t i = 0; i < traffic.size(); ++i) {
          fct.push_back((result.flows[i].finish - result.flows[i].start).seconds());
          total += traffic[i].bytes.as_double();
        }
        std::sort(fct.begin(), fct.end());
        auto pct = [&](double p) {
          if (fct.empty()) return 0.0;
          const auto k = static_cast<std::size_t>(p * static_cast<double>(fct.size() - 1));
          return fct[k];
        };
        ctx.out << fmt::format(
            "traffic on {}: {} flows, {} in total, links {}\n", topo.name(), traffic.size(),
            format_bytes(Bytes(static_cast<std::int64_t>(total))), options->links);
        ctx.out << fmt::format("makespan: {}\n", format_time(result.makespan));
        ctx.out << fmt::format(
            "flow completion time: min {}  median {}  p99 {}  max {}\n",
            format_time(Time::from_seconds(pct(0))), format_time(Time::from_seconds(pct(0.5))),
            format_time(Time::from_seconds(pct(0.99))), format_time(Time::from_seconds(pct(1))));
        std::vector<LinkOutcome> busiest = result.links;
        std::stable_sort(busiest.begin(), busiest.end(), [](const auto& a, const auto& b) {
          return a.utilization > b.utilization;
        });
        if (busiest.size() > options->top) busiest.resize(options->top);
        ctx.out << fmt::format("\n{:<44} {:>10} {:>12} {:>7} {:>6}\n", "busiest links", "bandwidth",
                               "carried", "util", "flows");
        for (const LinkOutcome& l : busiest)
          ctx.out << fmt::format("{:<44} {:>10} {:>12} {:>6.1f}% {:>6}\n", topo.describe(l.link),
                                 format_bandwidth(l.bandwidth),
                                 format_bytes(Bytes(static_cast<std::int64_t>(l.bytes_carried))),
                                 l.utilization * 100, l.peak_flows);
        return 0;
      }};
}

}  // namespace stepsim::cli
