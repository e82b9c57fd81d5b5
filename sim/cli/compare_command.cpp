// `stepsim compare`: several scenarios, or one scenario under several topologies or override sets,
// simulated one after the other and printed side by side; training steps, or serving scenarios'
// prefill and decode (TTFT, TPOT, tokens/s per accelerator).

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <ostream>
#include <sstream>

#include "sim/cli/command.hpp"
#include "sim/cli/progress_line.hpp"
#include "sim/common/config.hpp"
#include "sim/common/input_error.hpp"
#include "sim/output/csv_field.hpp"
#include "sim/run/html_report.hpp"
#include "sim/run/serve.hpp"
#include "sim/run/simulate.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/scenario/serving_scenario.hpp"
#include "sim/search/candidate_queue.hpp"
#include "sim/search/distribution.hpp"
#include "sim/search/layout_search.hpp"

namespace stepsim::cli {
namespace {

struct Variant {
  std::string label;
  std::string file;
  std::vector<std::string> overrides;
};

std::vector<std::string> split_assignments(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string word;
  while (in >> word)
    out.push_back(word);
  return out;
}

using output::csv_field;

Time exposed_total(const StepReport& r) {
  Time t;
  if (r.breakdowns.empty()) return t;
  for (const auto& e : r.breakdowns.front().parts.exposed)
    t += e;
  return t;
}

bool is_serving_file(const std::string& file) {
  const config::Document document = config::Document::load_file(file);
  const config::Node root = document.root();
  return root.is_map() && root.has("serving");
}

// `stepsim compare` of serving scenarios (docs/serving.md): each variant's prefill pass and
// decode step, TTFT, TPOT and tokens/s per accelerator side by side. Runs in the process that
// writes (under an MPI launcher the others only validate).
int compare_serving(Context& ctx, const std::vector<Variant>& variants, const std::string& json,
                    const std::string& csv, const std::string& html, bool writes) {
  std::vector<ServingScenario> scenarios;
  for (const auto& v : variants)
    scenarios.push_back(load_serving_scenario(v.file, v.overrides));
  if (!writes) return 0;
  std::optional<output::AtomicFile> json_file;
  std::optional<output::AtomicFile> csv_file;
  std::optional<output::AtomicFile> html_file;
  if (!json.empty()) json_file.emplace(json, ctx.output_guard);
  if (!csv.empty()) csv_file.emplace(csv, ctx.output_guard);
  if (!html.empty()) html_file.emplace(html, ctx.output_guard);
  std::vector<ServeReport> reports;
  for (std::size_t i = 0; i < scenarios.size(); ++i) {
    ctx.log.debug("simulating {}", variants[i].label);
    reports.push_back(make_serve_report(scenarios[i], std::nullopt));
  }
  std::size_t width = 8;
  for (const auto& v : variants)
    width = std::max(width, v.label.size() + 2);
  auto time_or_dash = [](bool has, Time t) { return has ? format_time(t) : std::string("-"); };
  auto rate_or_dash = [](const std::optional<PassReport>& p) {
    return p ? fmt::format("{:.1f}", p->tokens_per_s_per_accelerator) : std::string("-");
  };
  auto memory_or_dash = [](const std::optional<PassReport>& p) {
    return p ? fmt::format("{:.2f} GB", p->memory.total().as_double() * 1e-9) : std::string("-");
  };
  ctx.out << fmt::format("{:<{}}{:>14}{:>14}{:>14}{:>16}{:>16}{:>14}{:>14}\n", "variant", width,
                         "TTFT", "KV transfer", "TPOT", "prompt tok/s", "output tok/s",
                         "prefill mem", "decode mem");
  for (std::size_t i = 0; i < reports.size(); ++i) {
    const ServeReport& r = reports[i];
    ctx.out << fmt::format(
        "{:<{}}{:>14}{:>14}{:>14}{:>16}{:>16}{:>14}{:>14}\n", variants[i].label, width,
        time_or_dash(r.prefill.has_value(), r.ttft),
        time_or_dash(r.kv_transfer.has_value(), r.kv_transfer ? r.kv_transfer->time : Time{}),
        time_or_dash(r.decode.has_value(), r.decode ? r.decode->time : Time{}),
        rate_or_dash(r.prefill), rate_or_dash(r.decode), memory_or_dash(r.prefill),
        memory_or_dash(r.decode));
  }
  ctx.out << "(tokens/s per accelerator; memory per accelerator: weights, KV cache and "
             "activations)\n";
  ctx.out.flush();
  if (json_file) {
    auto rows = nlohmann::ordered_json::array();
    for (std::size_t i = 0; i < reports.size(); ++i) {
      nlohmann::ordered_json entry;
      entry["variant"] = variants[i].label;
      entry["report"] = to_json(reports[i]);
      rows.push_back(entry);
    }
    json_file->stream() << rows.dump(2) << '\n';
    json_file->commit();
  }
  if (csv_file) {
    std::ostream& out = csv_file->stream();
    out << "variant,ttft_s,kv_transfer_s,tpot_s,prompt_tokens_per_s_per_accelerator,"
           "output_tokens_per_s_per_accelerator,prefill_memory_bytes,decode_memory_bytes\n";
    auto seconds = [](bool has, Time t) {
      return has ? fmt::format("{:.9g}", t.seconds()) : std::string();
    };
    auto rate = [](const std::optional<PassReport>& p) {
      return p ? fmt::format("{:.6g}", p->tokens_per_s_per_accelerator) : std::string();
    };
    auto memory = [](const std::optional<PassReport>& p) {
      return p ? std::to_string(p->memory.total().count()) : std::string();
    };
    for (std::size_t i = 0; i < reports.size(); ++i) {
      const ServeReport& r = reports[i];
      out << csv_field(variants[i].label) << ',' << seconds(r.prefill.has_value(), r.ttft) << ','
          << seconds(r.kv_transfer.has_value(), r.kv_transfer ? r.kv_transfer->time : Time{}) << ','
          << seconds(r.decode.has_value(), r.decode ? r.decode->time : Time{}) << ','
          << rate(r.prefill) << ',' << rate(r.decode) << ',' << memory(r.prefill) << ','
          << memory(r.decode) << '\n';
    }
    csv_file->commit();
  }
  if (html_file) {
    std::vector<std::string> labels;
    for (const auto& v : variants)
      labels.push_back(v.label);
    write_serve_compare_html(html_file->stream(), labels, reports);
    html_file->commit();
  }
  return 0;
}

}  // namespace

Command add_compare_command(CLI::App& app) {
  struct Options {
    std::vector<std::string> files;
    std::vector<std::string> overrides;
    std::vector<std::string> topologies;
    std::vector<std::string> variants;
    std::string json;
    std::string csv;
    std::string html;
    std::string max_memory;
    bool search = false;
    std::vector<std::string> spaces;
    std::vector<std::string> memory_overrides;
    unsigned jobs = 0;
  };
  auto options = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand(
      "compare",
      "Simulate several scenarios, or one under several topologies or overrides, side by side");
  sub->add_option("scenarios", options->files, "Scenario YAML files")->required();
  add_override_option(*sub, options->overrides);
  sub->add_option("--topology", options->topologies,
                  "Run the (single) scenario on this topology too (repeatable)")
      ->type_name("SPEC");
  sub->add_option("--variant", options->variants,
                  "Run the (single) scenario with these overrides, e.g. \"parallelism.tp=4 "
                  "parallelism.pp=2\" (repeatable)")
      ->type_name("\"K=V ...\"");
  sub->add_option("--json", options->json, "Write the table as JSON")->type_name("FILE.json");
  sub->add_option("--csv", options->csv, "Write the table as CSV")->type_name("FILE.csv");
  sub->add_option("--html", options->html,
                  "Write a self-contained HTML page of charts, the variants side by side")
      ->type_name("FILE.html");
  add_max_memory_option(*sub, options->max_memory);
  CLI::Option* search =
      sub->add_flag("--search", options->search,
                    "Search the fastest layout of each scenario or variant (as stepsim search) "
                    "and compare the best of each");
  sub->add_option("--space", options->spaces,
                  "With --search: the values to try, as for stepsim search (repeatable)")
      ->type_name("FILE.yaml|KEY=V1,V2")
      ->needs(search);
  add_memory_with_option(*sub, options->memory_overrides)->needs(search);
  sub->add_option("-j,--jobs", options->jobs,
                  "With --search: simulations at once in each process (default: the "
                  "machine's cores, shared among the MPI processes on it)")
      ->type_name("N")
      ->check(CLI::Range(1u, 1024u))
      ->needs(search);

  return {
      sub, [options](Context& ctx) {
        std::vector<Variant> variants;
        const bool varied = !options->topologies.empty() || !options->variants.empty();
        if (varied && options->files.size() != 1) {
          throw InputError("--topology and --variant compare one scenario; give exactly one file");
        }
        for (const auto& f : options->files) {
          if (!varied) variants.push_back({f, f, options->overrides});
        }
        for (const auto& t : options->topologies) {
          auto o = options->overrides;
          o.push_back("topology=" + t);
          variants.push_back({t, options->files.front(), o});
        }
        for (const auto& v : options->variants) {
          auto o = options->overrides;
          for (auto& a : split_assignments(v))
            o.push_back(a);
          variants.push_back({v, options->files.front(), o});
        }
        // Under an MPI launcher every process loads the variants, the simulations are shared
        // among the processes (each search's, or the variants themselves), and process 0 alone
        // writes (sim/search/distribution.hpp).
        const auto distribution = search::make_distribution();
        const bool writes = distribution->writes_output();
        if (!writes) silence(ctx);
        // Serving scenarios (a `serving:` section) compare their TTFT and TPOT; every file must
        // be of the same kind.
        std::optional<std::string> training_file, serving_file;
        for (const auto& f : options->files)
          (is_serving_file(f) ? serving_file : training_file) = f;
        if (serving_file && training_file) {
          throw InputError(fmt::format(
              "{} is a serving scenario and {} a training scenario: compare one kind at a time",
              *serving_file, *training_file));
        }
        if (serving_file) {
          if (options->search)
            throw InputError(fmt::format(
                "--search compares training layouts; {} is a serving scenario", *serving_file));
          if (!options->max_memory.empty())
            throw InputError(fmt::format(
                "--max-memory applies to training steps; {} is a serving scenario", *serving_file));
          return compare_serving(ctx, variants, options->json, options->csv, options->html, writes);
        }
        // Validate everything before running anything. The output files start before the runs
        // (a bad path fails at once) and are renamed into place when complete.
        std::vector<Scenario> scenarios;
        Bytes max_simulation_memory;
        std::optional<output::AtomicFile> json_file;
        std::optional<output::AtomicFile> csv_file;
        std::optional<output::AtomicFile> html_file;
        std::string error;
        try {
          for (const auto& v : variants) {
            scenarios.push_back(load_scenario(v.file, v.overrides));
            // A search prunes the layouts too big to simulate (rule max-memory) instead.
            if (!options->search)
              guard_resources(ctx, scenarios.back().workload, options->max_memory);
          }
          max_simulation_memory = memory_limit(options->max_memory).first;
          if (writes && !options->json.empty()) json_file.emplace(options->json, ctx.output_guard);
          if (writes && !options->csv.empty()) csv_file.emplace(options->csv, ctx.output_guard);
          if (writes && !options->html.empty()) html_file.emplace(options->html, ctx.output_guard);
        } catch (const InputError& e) {
          error = e.what();
        }
        if (const std::string first = distribution->first_error(error); !first.empty())
          throw InputError(first);

        std::vector<StepReport> reports;
        if (options->search) {
          ProgressLine progress(ctx);
          for (std::size_t i = 0; i < scenarios.size(); ++i) {
            // Each variant at its best: a fixed layout favours the fabric it was written for.
            ctx.log.debug("searching {}", variants[i].label);
            search::SearchSpace space = search::default_space(scenarios[i]);
            for (const auto& s : options->spaces)
              search::apply_space_argument(space, s);
            search::SearchOptions so;
            so.threads = distribution->threads(options->jobs);
            so.distribution = distribution.get();
            so.memory_overrides = options->memory_overrides;
            so.max_simulation_memory = max_simulation_memory;
            if (progress.enabled()) {
              so.progress = [&, i](const search::SearchProgress& p) {
                if (!progress.due()) return;
                progress.show(fmt::format(
                    "comparing: searching {} of {} ({}): {} simulated, {} running, at most {} to "
                    "go, {:.0f} s",
                    i + 1, scenarios.size(), variants[i].label, p.simulated, p.running,
                    p.left_at_most, progress.elapsed_s()));
              };
            }
            search::SearchOutcome outcome = search::search_layouts(scenarios[i], space, so);
            if (!writes) continue;
            variants[i].label += " [" + outcome.ranked.front().candidate.label + "]";
            reports.push_back(std::move(outcome.ranked.front().report));
          }
          progress.clear();
        } else {
          // One variant after the other in one process (the first error, in order, is the one
          // reported), or shared among the processes of an MPI launch.
          search::CandidateQueue queue(std::vector<Time>(scenarios.size()), false, {});
          // A progress line on a terminal: the run going on, its share of operations done and
          // the time left for it at the rate so far.
          ProgressLine progress(ctx);
          distribution->run(queue, 1, [&](std::size_t i) {
            ctx.log.debug("simulating {}", variants[i].label);
            SimulateOptions simulate;
            const double started_s = progress.elapsed_s();
            if (progress.enabled()) {
              simulate.progress = [&, i, started_s](std::uint64_t done, std::uint64_t total) {
                if (!progress.due()) return;
                const double fraction = static_cast<double>(done) / static_cast<double>(total);
                const std::size_t after = scenarios.size() - i - 1;
                progress.show_done(
                    fmt::format("comparing: run {} of {} ({}): {:.0f}% of its {} operations", i + 1,
                                scenarios.size(), variants[i].label, 100.0 * fraction, total),
                    fraction, started_s,
                    after == 0 ? " for it" : fmt::format(" for it, then {} more", after));
              };
            }
            return simulate_step(scenarios[i], simulate);
          });
          progress.clear();
          if (writes) {
            for (std::size_t i = 0; i < scenarios.size(); ++i) {
              if (queue.errors()[i]) std::rethrow_exception(queue.errors()[i]);
              reports.push_back(std::move(*queue.reports()[i]));
            }
          }
        }
        if (!writes) return 0;

        std::vector<std::string> dims;
        for (const auto& r : reports) {
          for (const auto& d : r.dimensions) {
            if (std::find(dims.begin(), dims.end(), d.name) == dims.end()) dims.push_back(d.name);
          }
        }
        auto exposed = [](const StepReport& r, const std::string& dim) {
          for (const auto& d : r.dimensions) {
            if (d.name == dim) return d.exposed;
          }
          return Time::zero();
        };
        std::size_t width = 8;
        for (const auto& v : variants)
          width = std::max(width, v.label.size() + 2);
        ctx.out << fmt::format("{:<{}}{:>14}{:>14}{:>8}", "variant", width, "step time", "tokens/s",
                               "MFU");
        for (const auto& d : dims)
          ctx.out << fmt::format("{:>14}", "exposed " + d);
        ctx.out << fmt::format("{:>14}  {}\n", "bubble", "busiest link");
        for (std::size_t i = 0; i < reports.size(); ++i) {
          const auto& r = reports[i];
          ctx.out << fmt::format("{:<{}}{:>14}{:>14.0f}{:>7.1f}%", variants[i].label, width,
                                 format_time(r.step_time), r.tokens_per_s, 100 * r.mfu);
          for (const auto& d : dims)
            ctx.out << fmt::format("{:>14}", format_time(exposed(r, d)));
          const Time bubble = r.breakdowns.empty() ? Time::zero() : r.breakdowns[0].parts.bubble;
          ctx.out << fmt::format("{:>14}  ", format_time(bubble));
          if (!r.busiest_links.empty()) {
            ctx.out << fmt::format("{} ({:.1f}%)", r.busiest_links[0].name,
                                   100 * r.busiest_links[0].utilization);
          }
          ctx.out << '\n';
        }
        ctx.out << fmt::format("(exposed communication and bubble on rank 0; total exposed: ");
        for (std::size_t i = 0; i < reports.size(); ++i) {
          ctx.out << (i ? ", " : "") << format_time(exposed_total(reports[i]));
        }
        ctx.out << ")\n";
        ctx.out.flush();

        if (json_file) {
          auto rows = nlohmann::ordered_json::array();
          for (std::size_t i = 0; i < reports.size(); ++i) {
            auto row = to_json(reports[i]);
            row.erase("resolved_scenario");
            nlohmann::ordered_json entry;
            entry["variant"] = variants[i].label;
            entry["report"] = row;
            rows.push_back(entry);
          }
          json_file->stream() << rows.dump(2) << '\n';
          json_file->commit();
        }
        if (csv_file) {
          std::ostream& csv = csv_file->stream();
          csv << "variant,step_time_s,tokens_per_s,mfu,bubble_s";
          for (const auto& d : dims)
            csv << ",exposed_" << d << "_s";
          csv << ",busiest_link,busiest_link_utilization\n";
          for (std::size_t i = 0; i < reports.size(); ++i) {
            const auto& r = reports[i];
            const Time bubble = r.breakdowns.empty() ? Time::zero() : r.breakdowns[0].parts.bubble;
            csv << csv_field(variants[i].label) << ','
                << fmt::format("{:.9g}", r.step_time.seconds()) << ','
                << fmt::format("{:.6g}", r.tokens_per_s) << ',' << fmt::format("{:.6g}", r.mfu)
                << ',' << fmt::format("{:.9g}", bubble.seconds());
            for (const auto& d : dims)
              csv << ',' << fmt::format("{:.9g}", exposed(r, d).seconds());
            csv << ',' << csv_field(r.busiest_links.empty() ? "" : r.busiest_links[0].name) << ','
                << fmt::format("{:.6g}",
                               r.busiest_links.empty() ? 0.0 : r.busiest_links[0].utilization)
                << '\n';
          }
          csv_file->commit();
        }
        if (html_file) {
          std::vector<std::string> labels;
          for (const auto& v : variants)
            labels.push_back(v.label);
          write_compare_html(html_file->stream(), labels, reports);
          html_file->commit();
        }
        return 0;
      }};
}

}  // namespace stepsim::cli
