#include "sim/app/kernel_listing.hpp"

#include <fmt/format.h>
#include <ostream>

#include "sim/scenario/scenario.hpp"

namespace stepsim::app {

workloads::KernelReport kernels(const ScenarioSource& scenario) {
  return workloads::step_kernels(load_training_scenario(scenario).workload);
}

void write_kernel_csv(std::ostream& out, const workloads::KernelReport& report) {
  out << "operation,kernel,pass,kind,shape,count,flops,bytes,time_us,efficiency,bound,source\n";
  for (const workloads::KernelRow& r : report.rows) {
    out << fmt::format("{},{},{},{},\"{}\",{},{:.6g},{:.6g},{:.3f},{:.3f},{},{}\n", r.operation,
                       r.kernel, r.pass, r.kind, r.shape, r.count, r.flops, r.bytes,
                       r.time.microseconds(), r.efficiency, r.memory_bound ? "memory" : "compute",
                       r.source);
  }
}

void write_kernel_table(std::ostream& out, const workloads::KernelReport& report) {
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

}  // namespace stepsim::app
