// `stepsim kernels SCENARIO`: every distinct kernel of one micro-batch's forward and backward (and
// the optimizer step) with its shape, FLOPs, bytes, bound, modelled time, efficiency and the data
// its time came from (workloads/kernel_report.hpp); `--csv FILE` writes the same table as CSV.

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "sim/cli/command.hpp"
#include "sim/output/atomic_output.hpp"
#include "sim/scenario/scenario.hpp"
#include "workloads/kernel_report.hpp"

namespace stepsim::cli {

namespace {

void write_csv(std::ostream& out, const workloads::KernelReport& report) {
  out << "operation,kernel,pass,kind,shape,count,flops,bytes,time_us,efficiency,bound,source\n";
  for (const workloads::KernelRow& r : report.rows) {
    out << fmt::format("{},{},{},{},\"{}\",{},{:.6g},{:.6g},{:.3f},{:.3f},{},{}\n", r.operation,
                       r.kernel, r.pass, r.kind, r.shape, r.count, r.flops, r.bytes,
                       r.time.microseconds(), r.efficiency, r.memory_bound ? "memory" : "compute",
                       r.source);
  }
}

void write_table(std::ostream& out, const workloads::KernelReport& report) {
  out << fmt::format(
      "device {}{}\n", report.device,
      report.calibrated ? "" : " (UNCALIBRATED: no public kernel data for part of it)");
  if (!report.note.empty()) out << "note: " << report.note << "\n";
  out << report.sources << "\n\n";
  out << fmt::format("{:<15} {:<19} {:<4} {:<40} {:>5} {:>11} {:>7} {:>6}  {}\n", "operation",
                     "kernel", "pass", "shape", "count", "time (us)", "eff", "bound", "source");
  for (const workloads::KernelRow& r : report.rows) {
    out << fmt::format("{:<15} {:<19} {:<4} {:<40} {:>5} {:>11.2f} {:>6.1f}% {:>6}  {}\n",
                       r.operation, r.kernel, r.pass, r.shape, r.count, r.time.microseconds(),
                       100 * r.efficiency, r.memory_bound ? "memory" : "compute", r.source);
  }
  out << fmt::format("\nkernel time of one micro-batch (count x time, launches excluded): {}\n",
                     format_time(report.total_per_micro_batch));
}

}  // namespace

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
            const Scenario scenario = load_scenario(options->file, options->overrides);
            const workloads::KernelReport report = workloads::step_kernels(scenario.workload);
            write_table(ctx.out, report);
            if (!options->csv.empty()) {
              output::write_file_atomically(
                  options->csv, [&](std::ostream& out) { write_csv(out, report); },
                  ctx.output_guard);
            }
            return 0;
          }};
}

}  // namespace stepsim::cli
