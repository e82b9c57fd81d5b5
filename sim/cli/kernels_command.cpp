// `stepsim kernels SCENARIO`: app::kernels as a table (workloads/kernel_report.hpp); `--csv FILE`
// writes the same table as CSV.

#include <CLI/CLI.hpp>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "sim/app/kernel_listing.hpp"
#include "sim/cli/command.hpp"
#include "sim/output/atomic_output.hpp"

namespace stepsim::cli {

Command add_kernels_command(CLI::App& app) {
  struct Options {
    std::string file;
    std::vector<std::string> overrides;
    std::string csv;
  };
  auto options = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand(
      "kernels", "List every distinct kernel of a scenario's step with its modelled time");
  sub->add_option("scenario", options->file, "Scenario YAML file")->required();
  add_override_option(*sub, options->overrides);
  sub->add_option("--csv", options->csv, "Also write the table as CSV to this file");
  return {sub, [options](Context& ctx) {
            const workloads::KernelReport report =
                app::kernels({options->file, {}, {}, options->overrides});
            app::write_kernel_table(ctx.out, report);
            if (!options->csv.empty()) {
              output::write_file_atomically(
                  options->csv, [&](std::ostream& out) { app::write_kernel_csv(out, report); },
                  ctx.output_guard);
            }
            return 0;
          }};
}

}  // namespace stepsim::cli
