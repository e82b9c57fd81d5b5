#include "sim/run/step_report.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cctype>
#include <ostream>

#include "sim/scenario/scenario.hpp"
#include "stepsim/version.hpp"
#include "workloads/model.hpp"
#include "workloads/operation.hpp"
#include "workloads/workload.hpp"

namespace stepsim {
namespace {

constexpr std::size_t kBusiestLinks = 10;

std::string percent(Time part, Time whole) {
  if (whole <= Time::zero()) return "-";
  return fmt::format("{:.1f}%", 100.0 * static_cast<double>(part.picoseconds()) /
                                    static_cast<double>(whole.picoseconds()));
}

std::string bytes_text(double bytes) {
  return format_bytes(Bytes(static_cast<std::int64_t>(std::llround(bytes))));
}

}  // namespace

std::string layout_text(const workloads::WorkloadSpec& spec) {
  const auto& p = spec.parallel;
  std::string text = fmt::format("tp{} pp{} dp{}", p.tp, p.pp, p.dp);
  if (p.cp > 1) text += fmt::format(" cp{}", p.cp);
  if (p.ep > 1) text += fmt::format(" ep{}", p.ep);
  if (p.sequence_parallel()) text += " sp";
  text += fmt::format(" ({}", workloads::to_string(p.schedule));
  if (p.vpp > 1) text += fmt::format(", vpp {}", p.vpp);
  text += fmt::format(", zero {})", p.zero);
  return text;
}

std::vector<int> representative_ranks(const workloads::Workload& workload) {
  const int stages = workload.spec().parallel.pp;
  std::vector<int> wanted{0};
  if (stages > 2) wanted.push_back(stages / 2);
  if (stages > 1) wanted.push_back(stages - 1);
  std::vector<int> ranks;
  for (int stage : wanted) {
    for (int r = 0; r < workload.world_size(); ++r) {
      if (workload.ranks().stage(r) == stage) {
        ranks.push_back(r);
        break;
      }
    }
  }
  return ranks;
}

nlohmann::ordered_json to_json(const config::Node& node) {
  if (node.is_scalar()) return node.as_string();
  if (node.is_sequence()) {
    auto array = nlohmann::ordered_json::array();
    for (const auto& item : node.items())
      array.push_back(to_json(item));
    return array;
  }
  if (node.is_map()) {
    auto object = nlohmann::ordered_json::object();
    for (const auto& [key, child] : node.entries())
      object[key] = to_json(child);
    return object;
  }
  return nullptr;
}

StepReport make_step_report(const Scenario& scenario, const workloads::Workload& workload,
                            const executor::Executor& executor,
                            const executor::ExecutionResult& result) {
  const auto& spec = workload.spec();
  StepReport r;
  r.scenario = scenario.name;
  r.topology = scenario.topology_spec;
  r.model = spec.model.name;
  r.layout = layout_text(spec);
  r.world_size = workload.world_size();
  r.idle_tolerance = scenario.network.idle_tolerance;
  r.step_time = result.step_time;
  r.tokens_per_step = spec.tokens_per_step();
  r.samples_per_step = spec.training.global_batch;
  const double seconds = result.step_time.seconds();
  if (seconds > 0) {
    r.tokens_per_s = static_cast<double>(r.tokens_per_step) / seconds;
    r.samples_per_s = static_cast<double>(r.samples_per_step) / seconds;
  }
  // Model FLOPs: forward + backward = 3 x forward, counted without recomputation (as MFU is
  // defined by Chowdhery et al., PaLM, appendix B).
  const auto forward = workloads::forward_flops_per_token(spec.model, spec.training.seq_len);
  r.model_flops_per_step = 3.0 * forward.total() * static_cast<double>(r.tokens_per_step);
  const double peak = spec.compute.device.peak_flops_per_s(spec.training.precision);
  r.peak_tflops = peak * 1e-12;
  if (seconds > 0) {
    r.tflops_per_accelerator = r.model_flops_per_step / seconds / r.world_size * 1e-12;
    r.mfu = peak > 0 ? r.tflops_per_accelerator / r.peak_tflops : 0;
  }

  for (const auto& b : result.breakdowns) {
    r.breakdowns.push_back(
        {fmt::format("rank {} (stage {})", b.rank, workload.ranks().stage(b.rank)), b});
  }
  for (std::size_t d = 1; d < executor::kDimensionCount; ++d) {
    const auto& t = result.traffic[d];
    if (t.collectives == 0) continue;
    DimensionReport dim;
    dim.name = std::string(workloads::to_string(static_cast<workloads::ParallelDim>(d)));
    dim.operations_per_rank = t.collectives / r.world_size;
    dim.payload_bytes_per_rank = t.payload.as_double() / r.world_size;
    dim.wire_bytes_per_rank = t.wire.as_double() / r.world_size;
    if (!result.breakdowns.empty()) dim.exposed = result.breakdowns.front().exposed[d];
    r.dimensions.push_back(dim);
  }

  const auto& network = executor.network();
  const auto& topology = scenario.topology;
  std::vector<LinkReport> links;
  for (std::size_t l = 0; l < topology.num_links(); ++l) {  // reduction links come after
    const engine::LinkId id{static_cast<std::uint32_t>(l)};
    const auto stats = network.link_statistics(id);
    if (stats.bytes_carried <= 0) continue;
    LinkReport link;
    const topology::LinkIndex index{static_cast<std::uint32_t>(l)};
    link.name = topology.describe(index);
    link.link_class = topology.link_class(index).name;
    link.bandwidth = network.bandwidth(id);
    link.bytes_carried = stats.bytes_carried;
    link.utilization = seconds > 0 ? stats.bytes_carried / (link.bandwidth.value() * seconds) : 0;
    link.peak_flows = stats.peak_flows;
    links.push_back(std::move(link));
  }
  std::stable_sort(links.begin(), links.end(), [](const LinkReport& a, const LinkReport& b) {
    return a.utilization > b.utilization;
  });
  if (links.size() > kBusiestLinks) links.resize(kBusiestLinks);
  r.busiest_links = std::move(links);

  r.memory = workloads::estimate_memory(spec);
  r.operations = result.operations;
  r.flows = result.flows;
  r.events = result.events;
  r.solves = executor.network().solves();
  r.classes_solved = executor.network().classes_solved();
  r.boundary_expansions = executor.network().boundary_expansions();
  r.twin_classes = executor.network().twin_classes();
  r.resolved_scenario = to_json(scenario.document.root());
  return r;
}

void print_memory(std::ostream& out, const std::vector<workloads::MemoryEstimate>& memory) {
  out << fmt::format("{:<22}{:>12}{:>12}{:>12}{:>13}{:>12}{:>12}\n", "Memory per rank",
                     "parameters", "gradients", "optimizer", "activations", "total", "capacity");
  for (const auto& m : memory) {
    out << fmt::format("  stage {:<14}{:>12}{:>12}{:>12}{:>13}{:>12}{:>12}{}\n", m.stage,
                       format_bytes(m.parameters), format_bytes(m.gradients),
                       format_bytes(m.optimizer_states), format_bytes(m.activations),
                       format_bytes(m.total), format_bytes(m.capacity),
                       m.exceeds_capacity ? "  EXCEEDS" : "");
  }
  for (const auto& m : memory) {
    if (!m.warning.empty()) out << "  warning: " << m.warning << '\n';
  }
}

void print_summary(std::ostream& out, const StepReport& r) {
  out << fmt::format("stepsim {} - scenario '{}'\n", kVersion, r.scenario);
  out << fmt::format("  topology  {} ({} accelerators)\n", r.topology, r.world_size);
  out << fmt::format("  model     {}, {}\n", r.model, r.layout);
  if (r.idle_tolerance > 0) {
    out << fmt::format(
        "  network   idle tolerance {:g}%: rates re-solved after departures only beyond it "
        "(approximate; docs/collectives.md)\n",
        100 * r.idle_tolerance);
  }
  out << '\n';
  out << fmt::format("Step time        {}\n", format_time(r.step_time));
  out << fmt::format("Throughput       {:.0f} tokens/s, {:.2f} samples/s\n", r.tokens_per_s,
                     r.samples_per_s);
  out << fmt::format(
      "Model FLOP/s     {:.1f} TFLOP/s per accelerator, MFU {:.1f}% (peak {:.0f} "
      "TFLOP/s)\n",
      r.tflops_per_accelerator, 100 * r.mfu, r.peak_tflops);

  if (!r.breakdowns.empty()) {
    out << fmt::format("\n{:<22}", "Where the time goes");
    for (const auto& b : r.breakdowns)
      out << fmt::format("{:>26}", b.label);
    out << '\n';
    auto row = [&](const std::string& name, auto get) {
      bool any = false;
      for (const auto& b : r.breakdowns)
        any = any || get(b.parts) > Time::zero();
      if (!any) return;
      out << fmt::format("  {:<20}", name);
      for (const auto& b : r.breakdowns) {
        const Time t = get(b.parts);
        out << fmt::format("{:>18} {:>7}", format_time(t), percent(t, r.step_time));
      }
      out << '\n';
    };
    row("compute", [](const executor::RankBreakdown& p) { return p.compute; });
    for (std::size_t d = 1; d < executor::kDimensionCount; ++d) {
      const std::string name =
          "exposed " + std::string(workloads::to_string(static_cast<workloads::ParallelDim>(d)));
      row(name, [d](const executor::RankBreakdown& p) { return p.exposed[d]; });
    }
    row("pipeline bubble", [](const executor::RankBreakdown& p) { return p.bubble; });
    row("waiting for peers", [](const executor::RankBreakdown& p) { return p.wait; });
    row("idle", [](const executor::RankBreakdown& p) { return p.idle; });
  }

  if (!r.dimensions.empty()) {
    out << fmt::format("\n{:<22}{:>12}{:>16}{:>16}\n", "Communication per rank", "operations",
                       "payload", "on the wire");
    for (const auto& d : r.dimensions) {
      out << fmt::format("  {:<20}{:>12}{:>16}{:>16}\n", d.name, d.operations_per_rank,
                         bytes_text(d.payload_bytes_per_rank), bytes_text(d.wire_bytes_per_rank));
    }
  }

  if (!r.busiest_links.empty()) {
    out << fmt::format("\n{:<46}{:>12}{:>14}{:>12}\n", "Busiest links", "utilization", "bandwidth",
                       "carried");
    for (const auto& l : r.busiest_links) {
      out << fmt::format("  {:<44}{:>11.1f}%{:>14}{:>12}\n", l.name, 100 * l.utilization,
                         format_bandwidth(l.bandwidth), bytes_text(l.bytes_carried));
    }
  }

  if (!r.memory.empty()) {
    out << "\n";
    print_memory(out, r.memory);
  }
  out << fmt::format("\nSimulated {} operations, {} transfers, {} events\n", r.operations, r.flows,
                     r.events);
}

nlohmann::ordered_json exposed_json(const std::array<Time, executor::kDimensionCount>& exposed) {
  auto j = nlohmann::ordered_json::object();
  for (std::size_t d = 1; d < executor::kDimensionCount; ++d)
    j[std::string(workloads::to_string(static_cast<workloads::ParallelDim>(d)))] =
        exposed[d].seconds();
  return j;
}

nlohmann::ordered_json to_json(const StepReport& r) {
  using json = nlohmann::ordered_json;
  json j;
  j["stepsim_version"] = kVersion;
  j["scenario"] = r.scenario;
  j["topology"] = r.topology;
  j["model"] = r.model;
  j["layout"] = r.layout;
  j["world_size"] = r.world_size;
  j["step_time_s"] = r.step_time.seconds();
  j["step_time_ps"] = r.step_time.picoseconds();
  j["tokens_per_step"] = r.tokens_per_step;
  j["samples_per_step"] = r.samples_per_step;
  j["tokens_per_s"] = r.tokens_per_s;
  j["samples_per_s"] = r.samples_per_s;
  j["model_flops_per_step"] = r.model_flops_per_step;
  j["tflops_per_accelerator"] = r.tflops_per_accelerator;
  j["peak_tflops"] = r.peak_tflops;
  j["mfu"] = r.mfu;
  json breakdown = json::array();
  for (const auto& b : r.breakdowns) {
    json e;
    e["rank"] = b.parts.rank;
    e["label"] = b.label;
    e["compute_s"] = b.parts.compute.seconds();
    e["exposed_communication_s"] = exposed_json(b.parts.exposed);
    e["pipeline_bubble_s"] = b.parts.bubble.seconds();
    e["waiting_s"] = b.parts.wait.seconds();
    e["idle_s"] = b.parts.idle.seconds();
    breakdown.push_back(e);
  }
  j["breakdown"] = breakdown;
  json dims = json::object();
  for (const auto& d : r.dimensions) {
    dims[d.name] = {{"operations_per_rank", d.operations_per_rank},
                    {"payload_bytes_per_rank", d.payload_bytes_per_rank},
                    {"wire_bytes_per_rank", d.wire_bytes_per_rank},
                    {"exposed_s", d.exposed.seconds()}};
  }
  j["communication"] = dims;
  json links = json::array();
  for (const auto& l : r.busiest_links) {
    links.push_back({{"link", l.name},
                     {"class", l.link_class},
                     {"bandwidth_Bps", l.bandwidth.value()},
                     {"utilization", l.utilization},
                     {"bytes_carried", l.bytes_carried},
                     {"peak_flows", l.peak_flows}});
  }
  j["busiest_links"] = links;
  json memory = json::array();
  for (const auto& m : r.memory) {
    memory.push_back({{"stage", m.stage},
                      {"parameters_bytes", m.parameters.count()},
                      {"gradients_bytes", m.gradients.count()},
                      {"optimizer_states_bytes", m.optimizer_states.count()},
                      {"activations_bytes", m.activations.count()},
                      {"total_bytes", m.total.count()},
                      {"capacity_bytes", m.capacity.count()},
                      {"exceeds_capacity", m.exceeds_capacity},
                      {"warning", m.warning}});
  }
  j["memory"] = memory;
  j["simulation"] = {{"operations", r.operations},
                     {"transfers", r.flows},
                     {"events", r.events},
                     {"idle_tolerance", r.idle_tolerance}};
  j["resolved_scenario"] = r.resolved_scenario;
  return j;
}

}  // namespace stepsim
