// `stepsim collective --topology T --op OP --ranks N|LIST --algo NAME --sizes MIN:MAX`: runs one
// collective per size on an otherwise idle network and prints the nccl-tests table (size, count,
// type, time, algbw, busbw; busbw as nccl-tests' doc/PERFORMANCE.md defines it). `--json` prints
// the rows as JSON.

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <cmath>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>

#include "sim/cli/command.hpp"
#include "sim/cli/progress_line.hpp"
#include "sim/collectives/algorithms/algorithm_registry.hpp"
#include "sim/collectives/algorithms/planned_collective.hpp"
#include "sim/collectives/nccl/nccl_tuner.hpp"
#include "sim/collectives/plan/alltoallv_matrix.hpp"
#include "sim/collectives/plan/size_sweep.hpp"
#include "sim/collectives/runner/collective_session.hpp"
#include "sim/common/input_error.hpp"
#include "sim/run/html_report.hpp"
#include "sim/run/resource_estimate.hpp"
#include "sim/validation/published_points.hpp"
#include "topology/load_topology.hpp"

namespace stepsim::cli {
namespace {

using namespace stepsim::collectives;

struct Row {
  Bytes size;
  std::int64_t count;
  double time_us;
  double algbw;  // GB/s
  double busbw;  // GB/s
  std::string algorithm;
};

// Memory per transfer of an AllToAll plan on the flow network (its route, flow state and
// record), measured with GNU time's peak resident size: `stepsim collective -t
// dgx-h100-superpod:nodes=N --op alltoall --sizes 64MiB` took 71 MB at N = 32 (65,280 transfers)
// and 274 MB at N = 64 (261,632), 1.03 kB per transfer; rounded up (docs/reliability.md).
constexpr double kBytesPerPairTransfer = 1100;

// An AllToAll sends from every rank to every other at once: n(n-1) transfers, the one collective
// whose size grows with the square of the group. Throws InputError with the estimate when it
// needs more memory than `max_memory` (or the machine's).
void guard_collective(CollectiveKind kind, std::uint32_t n, const std::string& max_memory) {
  if (kind != CollectiveKind::kAllToAll && kind != CollectiveKind::kAllToAllv) return;
  guard_all_to_all(fmt::format("--op {}", to_string(kind)), "transfers", n, kBytesPerPairTransfer,
                   max_memory);
}

}  // namespace

Command add_collective_command(CLI::App& app) {
  struct Options {
    std::string topology;
    std::string op = "allreduce";
    std::string ranks = "all";
    std::string algo = "auto";
    std::string sizes = "8B:1GiB";
    std::string chunk_size;
    std::string step_latency;
    std::string op_latency;
    std::string links = "calibrated";
    std::string ecmp = "fabric";
    std::string pxn = "on";
    std::string proto = "auto";
    std::string nccl;
    std::uint32_t channels = 0;
    std::uint32_t root = 0;
    std::string matrix;
    std::optional<double> skew;
    bool json = false;
    std::string max_memory;
    std::string html;
    std::string published = "validation/cases.yaml";
  };
  auto options = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand(
      "collective", "Time one collective over a range of sizes, like nccl-tests (algbw, busbw)");
  sub->add_option("--topology,-t", options->topology, "Topology: preset spec or YAML file")
      ->required();
  sub->add_option("--op", options->op,
                  "allreduce, allgather, reducescatter, alltoall, alltoallv, broadcast, reduce, "
                  "sendrecv")
      ->capture_default_str();
  sub->add_option("--ranks,-n", options->ranks,
                  "N (the first N accelerators), a list 0,2,4, ranges 0-7,16-23, or all")
      ->capture_default_str();
  sub->add_option("--algo,-a", options->algo,
                  "ring, ring-fluid, ring-pipelined, tree, halving-doubling, direct, hierarchical, "
                  "hierarchical-pipelined, in-switch, nvls-tree, collnet, collnet-chain, "
                  "nvls-collnet, mesh, auto")
      ->capture_default_str();
  sub->add_option("--sizes,-s", options->sizes,
                  "MIN:MAX with units, doubling like nccl-tests -f 2 (or one size); at most 1PiB")
      ->capture_default_str();
  sub->add_option("--chunk-size", options->chunk_size, "Pipelining chunk size (default 1MiB)");
  sub->add_option("--channels", options->channels,
                  "Parallel rings (0: one per GPU of a node when the group spans nodes)")
      ->check(CLI::Range(0u, kMaxChannels))  // as network.channels in a scenario
      ->capture_default_str();
  sub->add_option("--step-latency", options->step_latency,
                  "Software latency per algorithm step (default: calibrated)");
  sub->add_option("--op-latency", options->op_latency,
                  "Software latency per operation (default: calibrated)");
  sub->add_option("--links", options->links,
                  "calibrated (effective bandwidths from nccl-tests data) or line-rate")
      ->capture_default_str();
  sub->add_option("--ecmp", options->ecmp,
                  "fabric (as the topology's link classes say), hash (one path per transfer), "
                  "spray (spread packet by packet over every link) or spread (split into one "
                  "flow per path)")
      ->capture_default_str();
  sub->add_option("--pxn", options->pxn,
                  "on: point-to-point transfers between nodes relay through the GPU on the "
                  "receiver's rail, as NCCL's PXN; off: through the sender's own NIC")
      ->capture_default_str();
  sub->add_option("--proto", options->proto,
                  "NCCL protocol: auto (NCCL's tuner picks by its predicted time), LL, LL128, "
                  "Simple (forced, as NCCL_PROTO), or off (no protocol costs); with --links "
                  "calibrated")
      ->capture_default_str();
  sub->add_option("--nccl", options->nccl,
                  "NCCL version whose choices auto makes, as 2.23 or 2.23.4 (default 2.20.3, the "
                  "tuner model's; from 2.23 auto offers PAT)");
  sub->add_option("--root", options->root, "Root rank (broadcast, reduce), index in the group")
      ->capture_default_str();
  CLI::Option* sizes_option = sub->get_option("--sizes");
  sub->add_option("--matrix", options->matrix,
                  "alltoallv: CSV of n x n per-pair sizes (row = sender); with --sizes, scaled "
                  "so that the largest row sum is each size");
  sub->add_option("--skew", options->skew,
                  "alltoallv: Zipf skew s >= 0; rank j receives a share ~ (j+1)^-s of every "
                  "rank's buffer (0: uniform)");
  sub->add_flag("--json", options->json, "Print JSON rows instead of the table");
  add_max_memory_option(*sub, options->max_memory);
  CLI::Option* html =
      sub->add_option("--html", options->html,
                      "Also write an HTML page plotting busbw against the size, with the "
                      "published figures of --published that match")
          ->type_name("FILE.html");
  sub->add_option("--published", options->published,
                  "Validation cases whose published busbw the HTML page overlays (skipped when "
                  "the file does not exist)")
      ->capture_default_str()
      ->type_name("CASES.yaml")
      ->needs(html);
  return {
      sub, [options, sizes_option](Context& ctx) {
        const CollectiveKind kind = parse_collective_kind(options->op);
        const auto registry = builtin_algorithms();
        const auto algorithm = registry.create(options->algo);
        if (options->links != "calibrated" && options->links != "line-rate")
          throw InputError(
              fmt::format("--links '{}': expected 'calibrated' or 'line-rate'", options->links));
        if (!topology::parse_ecmp_mode(options->ecmp))
          throw InputError(fmt::format(
              "--ecmp '{}': expected 'fabric', 'hash', 'spray' or 'spread'", options->ecmp));
        if (options->pxn != "on" && options->pxn != "off")
          throw InputError(fmt::format("--pxn '{}': expected 'on' or 'off'", options->pxn));
        const std::vector<Bytes> sizes = parse_size_sweep(options->sizes);
        const topology::Topology topo =
            topology::load_topology_spec(options->topology, std::filesystem::current_path());
        const auto ranks =
            parse_ranks(options->ranks, static_cast<std::uint32_t>(topo.accelerators().size()));
        const Placement placement = place_group(topo, ranks);
        const GroupShape shape = group_shape(topo, placement);
        const auto n = static_cast<std::uint32_t>(ranks.size());
        // One rank has nothing to exchange: the time is zero and the bandwidths infinite.
        if (n < 2)
          throw InputError(fmt::format("--ranks '{}': a collective needs at least 2 ranks, got {}",
                                       options->ranks, n));
        // AllToAllv: the per-pair sizes for each size of the sweep (the largest row sum).
        std::optional<AllToAllvMatrix> file_matrix;
        std::vector<Bytes> sweep = sizes;
        if (kind == CollectiveKind::kAllToAllv) {
          if (options->matrix.empty() == !options->skew.has_value())
            throw InputError(
                "--op alltoallv needs its per-pair sizes: --matrix FILE.csv (n x n sizes, row = "
                "sender) or --skew S (Zipf skew of the receivers, 0 = uniform), one of the two");
          if (!options->matrix.empty()) {
            file_matrix = read_alltoallv_matrix_csv(options->matrix, n);
            if (sizes_option->count() == 0) sweep = {file_matrix->largest_row_sum()};
          } else {
            check_skew(*options->skew);
          }
        } else if (!options->matrix.empty() || options->skew.has_value()) {
          throw InputError(fmt::format("--matrix and --skew apply to --op alltoallv, not --op {}",
                                       to_string(kind)));
        }
        if (kind == CollectiveKind::kSendRecv && n != 2)
          throw InputError(fmt::format("--op sendrecv runs between two ranks; --ranks gave {}", n));
        if (options->root >= n)
          throw InputError(fmt::format("--root {}: the group has {} ranks", options->root, n));
        guard_collective(kind, n, options->max_memory);

        const Calibration calibration =
            options->links == "calibrated" ? calibrated_presets() : line_rate_presets();
        PlanOptions plan_options = calibration.plan_options();
        if (!options->chunk_size.empty()) {
          plan_options.chunk_size = option_value("--chunk-size", options->chunk_size, parse_bytes);
          if (plan_options.chunk_size.count() < 1)
            throw InputError(
                fmt::format("--chunk-size '{}': expected at least 1 byte", options->chunk_size));
        }
        // At most 1 s, as in a scenario's network section.
        auto latency = [&](std::string_view option, const std::string& text) {
          const Time t = option_value(option, text, parse_time);
          if (t > kMaxSoftwareLatency)
            throw InputError(fmt::format("{} '{}': expected at most 1 s", option, text));
          return t;
        };
        if (!options->step_latency.empty())
          plan_options.step_latency = latency("--step-latency", options->step_latency);
        if (!options->op_latency.empty())
          plan_options.op_latency = latency("--op-latency", options->op_latency);
        plan_options.channels = options->channels;
        plan_options.pxn = options->pxn == "on";
        const auto protocol = parse_protocol_choice(options->proto);
        if (!protocol)
          throw InputError(
              fmt::format("--proto '{}': expected auto, LL, LL128, Simple or off", options->proto));
        // Line rate studies the network alone unless a protocol is asked for.
        if (options->links == "calibrated" || options->proto != "auto")
          plan_options.protocol = *protocol;
        if (!options->nccl.empty()) {
          const auto version = parse_nccl_version(options->nccl);
          if (!version)
            throw InputError(
                fmt::format("--nccl '{}': expected an NCCL version from 2.20 on, as 2.23 or 2.23.4",
                            options->nccl));
          plan_options.nccl_version = *version;
        }
        RunnerOptions runner_options;
        runner_options.ecmp = *topology::parse_ecmp_mode(options->ecmp);
        // A progress line on a terminal: the size being run, its share of its plan's transfers
        // done and the time left for it at the rate so far (the larger sizes after it cost more).
        ProgressLine progress(ctx);
        struct {
          std::size_t index = 0;
          Bytes size;
          std::uint64_t transfers = 0;    // in this size's plan
          std::uint64_t done_before = 0;  // by the sizes before it
          double started_s = 0.0;
        } now;
        const auto show = [&](std::uint64_t done) {
          if (!progress.due()) return;
          const double fraction = now.transfers == 0 ? 0.0
                                                     : static_cast<double>(done - now.done_before) /
                                                           static_cast<double>(now.transfers);
          const std::size_t after = sweep.size() - now.index - 1;
          progress.show_done(
              fmt::format("size {} of {} ({}): {:.0f}% of its {} transfers", now.index + 1,
                          sweep.size(), format_bytes(now.size), 100.0 * fraction, now.transfers),
              fraction, now.started_s,
              after == 0
                  ? " for it"
                  : fmt::format(" for it, then {} larger size{}", after, after == 1 ? "" : "s"));
        };
        if (progress.enabled()) runner_options.progress = show;
        CollectiveSession session(topo, calibration, runner_options);

        // The HTML page starts before the runs, so a bad path fails at once.
        std::optional<output::AtomicFile> html_file;
        if (!options->html.empty()) html_file.emplace(options->html, ctx.output_guard);

        constexpr int kTypeBytes = 4;  // float, as nccl-tests' default
        std::vector<Row> rows;
        for (std::size_t i = 0; i < sweep.size(); ++i) {
          const Bytes size = sweep[i];
          Operation op;
          op.kind = kind;
          op.size = size;
          if (kind == CollectiveKind::kAllToAllv) {
            const AllToAllvMatrix m = file_matrix
                                          ? scale_alltoallv_matrix(*file_matrix, size)
                                          : skewed_alltoallv_matrix(n, size, *options->skew);
            op.matrix = m.sizes;
            op.size = m.largest_row_sum();
          }
          op.root = options->root;
          op.peer = 1;
          if (auto why = algorithm->unsupported(op, shape))
            throw InputError(fmt::format("--algo {} cannot run {} on these {} ranks: {}",
                                         options->algo, to_string(kind), n, *why));
          PlannedCollective planned = plan_collective(*algorithm, op, shape, plan_options);
          now.index = i;
          now.size = op.size;
          now.transfers = planned.plan.size();
          now.started_s = progress.elapsed_s();
          const Time t =
              session.run(std::make_shared<const Plan>(std::move(planned.plan)), placement);
          show(now.done_before + now.transfers);  // the size done: 100% of it
          now.done_before += now.transfers;
          const double algbw = op.size.as_double() / t.seconds() * 1e-9;
          rows.push_back({op.size, nccl_tests_count(kind, op.size, n, kTypeBytes), t.microseconds(),
                          algbw, algbw * bus_bandwidth_factor(kind, n), std::move(planned.label)});
        }

        progress.clear();
        if (html_file) {
          std::vector<PublishedBusbw> published;
          if (std::filesystem::exists(options->published)) {
            const auto cases = validation::load_cases(options->published);
            for (const auto& p : validation::published_busbw(
                     cases, options->topology, std::string(to_string(kind)), options->algo, ranks,
                     static_cast<std::uint32_t>(topo.accelerators().size()))) {
              published.push_back({p.size, p.busbw_GBps,
                                   fmt::format("{}, {}; {}", p.figure, p.algorithm, p.reference)});
            }
          } else {
            ctx.log.info("--published '{}' does not exist: no published points on the page",
                         options->published);
          }
          std::vector<CollectivePoint> points;
          for (const Row& r : rows)
            points.push_back({r.size, r.time_us, r.algbw, r.busbw, r.algorithm});
          const std::vector<std::vector<std::string>> setup = {
              {"topology", fmt::format("{} ({})", options->topology, topo.name())},
              {"operation", std::string(to_string(kind))},
              {"ranks", fmt::format("{} ({})", n, options->ranks)},
              {"algorithm", options->algo},
              {"links", options->links},
              {"sizes", options->sizes}};
          write_collective_html(
              html_file->stream(),
              fmt::format("{} on {} ranks of {}", to_string(kind), n, topo.name()), setup, points,
              published);
          html_file->commit();
        }
        if (options->json) {
          nlohmann::json j;
          j["topology"] = topo.name();
          j["op"] = std::string(to_string(kind));
          j["ranks"] = n;
          j["algorithm"] = options->algo;
          j["links"] = options->links;
          j["protocol"] = options->proto;
          if (!options->nccl.empty()) j["nccl"] = options->nccl;
          if (!options->matrix.empty()) j["matrix"] = options->matrix;
          if (options->skew) j["skew"] = *options->skew;
          nlohmann::json out = nlohmann::json::array();
          for (const Row& r : rows)
            out.push_back({{"size_bytes", r.size.count()},
                           {"count", r.count},
                           {"type", "float"},
                           {"time_us", r.time_us},
                           {"algbw_GBps", r.algbw},
                           {"busbw_GBps", r.busbw},
                           {"algorithm", r.algorithm}});
          j["rows"] = out;
          ctx.out << j.dump(2) << "\n";
          return 0;
        }
        ctx.out << fmt::format(
            "# stepsim collective: {} on {} ranks of {}, algorithm {}, "
            "links {}, protocol {}{}\n#\n",
            to_string(kind), n, topo.name(), options->algo, options->links, options->proto,
            options->nccl.empty() ? std::string() : ", NCCL " + options->nccl);
        ctx.out << fmt::format("# {:>12}  {:>12}  {:>6}  {:>10}  {:>7}  {:>7}  {}\n", "size",
                               "count", "type", "time", "algbw", "busbw", "algorithm");
        ctx.out << fmt::format("# {:>12}  {:>12}  {:>6}  {:>10}  {:>7}  {:>7}\n", "(B)",
                               "(elements)", "", "(us)", "(GB/s)", "(GB/s)");
        for (const Row& r : rows)
          ctx.out << fmt::format("  {:>12}  {:>12}  {:>6}  {:>10.2f}  {:>7.2f}  {:>7.2f}  {}\n",
                                 r.size.count(), r.count, "float", r.time_us, r.algbw, r.busbw,
                                 r.algorithm);
        double sum = 0;
        for (const Row& r : rows)
          sum += r.busbw;
        ctx.out << fmt::format("# Avg bus bandwidth    : {:.3f}\n",
                               rows.empty() ? 0.0 : sum / static_cast<double>(rows.size()));
        return 0;
      }};
}

}  // namespace stepsim::cli
