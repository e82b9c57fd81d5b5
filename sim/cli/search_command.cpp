// `stepsim search SCENARIO`: the fastest parallel layout for the scenario's model on its cluster
// (sim/search/layout_search.hpp; docs/search.md).

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <ostream>

#include <spdlog/spdlog.h>

#include "sim/cli/command.hpp"
#include "sim/common/input_error.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/search/distribution.hpp"
#include "sim/search/layout_search.hpp"
#include "sim/search/search_output.hpp"

namespace stepsim::cli {

Command add_search_command(CLI::App& app) {
  struct Options {
    std::string file;
    std::vector<std::string> overrides;
    std::vector<std::string> spaces;
    double memory_margin = 0.0;
    unsigned jobs = 0;
    std::size_t top = 10;
    std::string csv;
    std::string json;
    std::string write_best;
    std::string max_memory;
    std::vector<std::string> memory_overrides;
  };
  auto options = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand(
      "search", "Search the fastest parallel layout of a scenario's model on its cluster");
  sub->add_option("scenario", options->file, "Scenario YAML file")->required();
  add_override_option(*sub, options->overrides);
  sub->add_option("--space", options->spaces,
                  "The values to try: a YAML file of KEY: [V1, V2] or KEY=V1,V2 (repeatable; keys "
                  "tp, sp, tp_comm_overlap, cp, cp_mode, pp, vpp, schedule, dp, ep, zero, "
                  "micro_batch, recompute, grad_bucket, order)")
      ->type_name("FILE.yaml|KEY=V1,V2");
  sub->add_option("--memory-margin", options->memory_margin,
                  "Fraction of the device's memory a layout must leave free (default 0)")
      ->type_name("FRACTION")
      ->check(CLI::Range(0.0, 0.9));
  sub->add_option("-j,--jobs", options->jobs,
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
  add_memory_with_option(*sub, options->memory_overrides);
  add_max_memory_option(*sub, options->max_memory);
  return {
      sub, [options](Context& ctx) {
        const auto started = std::chrono::steady_clock::now();
        // Under an MPI launcher every process searches and process 0 alone writes (the others'
        // logs and messages are silenced; docs/search.md).
        const auto distribution = search::make_distribution();
        const bool writes = distribution->writes_output();
        if (!writes) silence(ctx);
        std::optional<Scenario> loaded;
        search::SearchSpace space;
        // Output files start before the search, so a bad path fails at once.
        std::optional<output::AtomicFile> csv_file;
        std::optional<output::AtomicFile> json_file;
        std::optional<output::AtomicFile> best_file;
        Bytes max_simulation_memory;
        std::string error;
        try {
          loaded.emplace(load_scenario(options->file, options->overrides));
          // The guard of `run` applies to every candidate, the scenario's own layout included:
          // one too big to simulate is pruned, not an error (rule max-memory).
          max_simulation_memory = memory_limit(options->max_memory).first;
          space = search::default_space(*loaded);
          for (const auto& s : options->spaces)
            search::apply_space_argument(space, s);
          if (writes && !options->csv.empty()) csv_file.emplace(options->csv, ctx.output_guard);
          if (writes && !options->json.empty()) json_file.emplace(options->json, ctx.output_guard);
          if (writes && !options->write_best.empty())
            best_file.emplace(options->write_best, ctx.output_guard);
        } catch (const InputError& e) {
          error = e.what();
        }
        if (const std::string first = distribution->first_error(error); !first.empty())
          throw InputError(first);
        const Scenario& base = *loaded;

        search::SearchOptions search;
        search.threads = distribution->threads(options->jobs);
        search.memory_margin = options->memory_margin;
        search.memory_overrides = options->memory_overrides;
        search.max_simulation_memory = max_simulation_memory;
        search.distribution = distribution.get();
        // A progress line on stderr when it is a terminal (never with -q), with the time left at
        // the rate so far for the candidates that may still run (an upper bound: the bound may
        // stop the search before).
        bool progress_shown = false;
        bool first_call = true;
        const bool show = ctx.err_is_terminal && ctx.log.should_log(spdlog::level::info);
        search.progress = [&ctx, &progress_shown, &first_call, show, started,
                           threads =
                               search.threads * static_cast<unsigned>(distribution->processes())](
                              const search::SearchProgress& p) {
          const double elapsed =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
          if (first_call) {
            ctx.log.debug("layouts enumerated, checked and bounded in {:.1f} s", elapsed);
            first_call = false;
          }
          ctx.log.debug("{} simulated, {} running, best {}, at {:.1f} s", p.simulated, p.running,
                        p.best == Time::max() ? std::string("-") : format_time(p.best), elapsed);
          if (!show || elapsed < ctx.progress_after_s) return;
          progress_shown = true;
          std::string left = "estimating";
          if (p.simulated > 0) {
            const double each = elapsed / static_cast<double>(p.simulated);
            left = fmt::format("at most about {:.0f} s left",
                               each * static_cast<double>(p.left_at_most + p.running) /
                                   static_cast<double>(threads));
          }
          ctx.err << fmt::format(
                         "\rstepsim: searching: {} simulated, {} running, at most {} to go, "
                         "best {}, {:.0f} s, {}\x1b[K",
                         p.simulated, p.running, p.left_at_most,
                         p.best == Time::max() ? std::string("-") : format_time(p.best), elapsed,
                         left)
                  << std::flush;
        };
        const search::SearchOutcome outcome = search::search_layouts(base, space, search);
        if (!writes) return 0;
        if (progress_shown) ctx.err << "\r\x1b[K" << std::flush;
        search::print_search(ctx.out, outcome, options->top);
        ctx.out.flush();
        if (csv_file) {
          search::write_csv(csv_file->stream(), outcome);
          csv_file->commit();
        }
        if (json_file) {
          json_file->stream() << search::to_json(outcome).dump(2) << '\n';
          json_file->commit();
        }
        if (best_file) {
          search::write_scenario_yaml(best_file->stream(), base, outcome.ranked.front());
          best_file->commit();
        }
        const double wall =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        if (distribution->processes() > 1) {
          ctx.log.info("searched in {:.1f} s of wall time on {} MPI processes of {} thread{}", wall,
                       distribution->processes(), search.threads, search.threads == 1 ? "" : "s");
        } else {
          ctx.log.info("searched in {:.1f} s of wall time on {} thread{}", wall, search.threads,
                       search.threads == 1 ? "" : "s");
        }
        return 0;
      }};
}

}  // namespace stepsim::cli
