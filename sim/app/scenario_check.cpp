#include "sim/app/scenario_check.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <ostream>
#include <string>
#include <vector>

#include "sim/collectives/nccl/nccl_tuner.hpp"
#include "sim/run/step_report.hpp"
#include "workloads/compute_model.hpp"
#include "workloads/memory_model.hpp"
#include "workloads/model.hpp"

namespace stepsim::app {
namespace {

// The compute model the step uses, and how much of a device's kernel-level model public kernel
// measurements set.
std::string compute_text(const workloads::ComputeModel& c) {
  if (!c.kernels) {
    return fmt::format("{}, {} (the roofline{})", c.device.name, workloads::to_string(c.precision),
                       c.device.name == "custom" ? ", given by numbers"
                                                 : "; compute.model: kernels for the kernel-level "
                                                   "model");
  }
  const workloads::kernels::KernelTimer& t = *c.kernels;
  std::vector<std::string> missing;
  if (!t.gemm().params().calibrated) missing.emplace_back("GEMMs");
  if (!t.attention().rates().calibrated) missing.emplace_back("attention");
  if (!t.memory().calibrated) missing.emplace_back("memory-bound kernels");
  return fmt::format("{}, {} (kernel-level model, {})", c.device.name,
                     workloads::to_string(c.precision),
                     missing.empty() ? std::string("calibrated from kernel measurements")
                                     : fmt::format("UNCALIBRATED: no public kernel data for its {}",
                                                   fmt::join(missing, ", ")));
}

}  // namespace

Scenario check(const ScenarioSource& scenario) {
  return load_training_scenario(scenario);
}

void write_check_summary(std::ostream& out, const std::string& file, const Scenario& scenario) {
  out << fmt::format("{}: valid scenario '{}'", file, scenario.name);
  out << fmt::format(" ({} file{} read)\n", scenario.document.files().size(),
                     scenario.document.files().size() == 1 ? "" : "s");
  const auto& spec = scenario.workload;
  const auto params = workloads::count_parameters(spec.model);
  out << fmt::format("  topology  {} ({} accelerators)\n", scenario.topology_spec,
                     scenario.topology.accelerators().size());
  out << fmt::format("  model     {}, {:.1f}B parameters ({:.1f}B active per token)\n",
                     spec.model.name, params.total * 1e-9, params.active * 1e-9);
  out << fmt::format("  layout    {}, {} ranks\n", layout_text(spec), spec.parallel.world_size());
  out << fmt::format(
      "  batch     {} sequences of {} tokens per step; {} micro-batches of {} per "
      "data-parallel replica\n",
      spec.training.global_batch, spec.training.seq_len, spec.micro_batches(),
      spec.training.micro_batch);
  out << "  compute   " << compute_text(spec.compute) << "\n";
  const collectives::NetworkOptions& net = scenario.network;
  out << fmt::format(
      "  network   collectives {}{}, {} links, ECMP {}, PXN {}, {}\n\n", net.algorithm,
      net.plan.nccl_version == collectives::kNcclModelVersion
          ? std::string()
          : " as NCCL " + collectives::nccl_version_string(net.plan.nccl_version),
      net.calibrated ? "calibrated" : "line-rate", topology::to_string(net.runner.ecmp),
      net.plan.pxn ? "on" : "off",
      net.idle_tolerance > 0
          ? fmt::format("idle tolerance {:g}% (approximate max-min)", 100 * net.idle_tolerance)
          : std::string("exact max-min"));
  print_memory(out, workloads::estimate_memory(spec));
}

}  // namespace stepsim::app
