// `stepsim check SCENARIO`: validates a scenario completely and prints what it resolved to: the
// topology, the model with its parameter count, the layout and batch, and the memory per rank of
// every pipeline stage against the accelerator's capacity. No simulation runs.

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "sim/cli/command.hpp"
#include "sim/collectives/nccl/nccl_tuner.hpp"
#include "sim/run/step_report.hpp"
#include "sim/scenario/scenario.hpp"
#include "workloads/compute_model.hpp"
#include "workloads/memory_model.hpp"
#include "workloads/model.hpp"

namespace stepsim::cli {

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

Command add_check_command(CLI::App& app) {
  struct Options {
    std::string file;
    std::vector<std::string> overrides;
  };
  auto options = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand("check", "Validate a scenario file without running it");
  sub->add_option("scenario", options->file, "Scenario YAML file")->required();
  add_override_option(*sub, options->overrides);
  return {sub, [options](Context& ctx) {
            const Scenario scenario = load_scenario(options->file, options->overrides);
            ctx.out << fmt::format("{}: valid scenario '{}'", options->file, scenario.name);
            ctx.out << fmt::format(" ({} file{} read)\n", scenario.document.files().size(),
                                   scenario.document.files().size() == 1 ? "" : "s");
            const auto& spec = scenario.workload;
            const auto params = workloads::count_parameters(spec.model);
            ctx.out << fmt::format("  topology  {} ({} accelerators)\n", scenario.topology_spec,
                                   scenario.topology.accelerators().size());
            ctx.out << fmt::format(
                "  model     {}, {:.1f}B parameters ({:.1f}B active per token)\n", spec.model.name,
                params.total * 1e-9, params.active * 1e-9);
            ctx.out << fmt::format("  layout    {}, {} ranks\n", layout_text(spec),
                                   spec.parallel.world_size());
            ctx.out << fmt::format(
                "  batch     {} sequences of {} tokens per step; {} micro-batches of {} per "
                "data-parallel replica\n",
                spec.training.global_batch, spec.training.seq_len, spec.micro_batches(),
                spec.training.micro_batch);
            ctx.out << "  compute   " << compute_text(spec.compute) << "\n";
            const collectives::NetworkOptions& net = scenario.network;
            ctx.out << fmt::format(
                "  network   collectives {}{}, {} links, ECMP {}, PXN {}, {}\n\n", net.algorithm,
                net.plan.nccl_version == collectives::kNcclModelVersion
                    ? std::string()
                    : " as NCCL " + collectives::nccl_version_string(net.plan.nccl_version),
                net.calibrated ? "calibrated" : "line-rate", topology::to_string(net.runner.ecmp),
                net.plan.pxn ? "on" : "off",
                net.idle_tolerance > 0 ? fmt::format("idle tolerance {:g}% (approximate max-min)",
                                                     100 * net.idle_tolerance)
                                       : std::string("exact max-min"));
            print_memory(ctx.out, workloads::estimate_memory(spec));
            return 0;
          }};
}

}  // namespace stepsim::cli
