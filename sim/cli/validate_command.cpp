// `stepsim validate`: runs every validation case (validation/cases.yaml: the published nccl-tests
// and Megatron-LM figures), writes docs/validation.md and prints one summary line per table. Exits
// with 3 when a row's error exceeds twice its table's target (the regression threshold), so the
// ctest label `validation` can run it.

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <ostream>
#include <sstream>

#include "sim/cli/command.hpp"
#include "sim/common/input_error.hpp"
#include "sim/validation/validation_report.hpp"
#include "sim/validation/validation_run.hpp"

namespace stepsim::cli {

Command add_validate_command(CLI::App& app) {
  struct Options {
    std::string cases = "validation/cases.yaml";
    std::string output = "docs/validation.md";
    bool quick = false;
  };
  auto options = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand(
      "validate",
      "Compare stepsim with published measurements (nccl-tests, Megatron-LM) and write the report");
  sub->add_option("--cases", options->cases, "Validation case file")->capture_default_str();
  sub->add_option("--output,-o", options->output, "Markdown report to write ('-': stdout)")
      ->capture_default_str();
  sub->add_flag("--quick", options->quick,
                "Only the cases marked quick (what the ctest label 'validation' runs)");
  return {sub, [options](Context& ctx) {
            const auto cases = validation::load_cases(options->cases);
            // Start the output before the long run, so a bad path fails at once; the earlier
            // report stays until the new one is complete.
            std::optional<output::AtomicFile> file;
            if (options->output != "-") file.emplace(options->output, ctx.output_guard);
            validation::RunOptions run;
            run.quick_only = options->quick;
            // Each case named as it starts (info), with how many are left.
            std::size_t total = 0, started = 0;
            for (const auto& t : cases.tables)
              for (const auto& c : t.cases)
                if (!options->quick || c.quick) ++total;
            run.on_case = [&ctx, &total, &started](const validation::Table& t,
                                                   const validation::Case& c) {
              ++started;
              ctx.log.info("case {} of {}: {}: {}", started, total, t.name, c.figure);
            };
            const auto results = validation::run_cases(cases, run);
            std::ostringstream report;
            validation::write_report(report, cases, results, options->quick);
            if (options->output == "-") {
              ctx.out << report.str();
            } else {
              file->stream() << report.str();
              file->commit();
            }
            validation::write_summary(ctx.out, results);
            for (const auto& t : results)
              if (!t.failures().empty()) return 3;
            return 0;
          }};
}

}  // namespace stepsim::cli
