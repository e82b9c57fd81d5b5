#include "sim/validation/validation_run.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "sim/collectives/algorithms/algorithm_registry.hpp"
#include "sim/collectives/algorithms/planned_collective.hpp"
#include "sim/collectives/runner/collective_session.hpp"
#include "sim/common/input_error.hpp"
#include "sim/run/serve.hpp"
#include "sim/run/simulate.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/scenario/serving_scenario.hpp"
#include "topology/load_topology.hpp"

namespace stepsim::validation {
namespace {

using namespace stepsim::collectives;

double simulate_collective(const CollectiveSetup& s, Measure measure, std::string* setup) {
  const topology::Topology topo =
      topology::load_topology_spec(s.topology, std::filesystem::current_path());
  const auto ranks = parse_ranks(s.ranks, static_cast<std::uint32_t>(topo.accelerators().size()));
  const Placement placement = place_group(topo, ranks);
  const GroupShape shape = group_shape(topo, placement);
  const auto registry = builtin_algorithms();
  const auto algorithm = registry.create(s.algorithm);
  Operation op;
  op.kind = parse_collective_kind(s.op);
  op.size = s.size;
  if (auto why = algorithm->unsupported(op, shape))
    throw InputError(fmt::format("algorithm {} cannot run {} on {} ranks of {}: {}", s.algorithm,
                                 s.op, ranks.size(), s.topology, *why));
  // As `stepsim collective` with its defaults: calibrated links, ECMP as the fabric says.
  const Calibration calibration = calibrated_presets();
  CollectiveSession session(topo, calibration);
  PlannedCollective planned = plan_collective(*algorithm, op, shape, calibration.plan_options());
  const std::string label = planned.label;
  const Time t = session.run(std::make_shared<const Plan>(std::move(planned.plan)), placement);
  if (setup)
    *setup = fmt::format("{} {} {} on {} ranks of {}", format_bytes(s.size), s.op, label,
                         ranks.size(), s.topology);
  const double busbw =
      s.size.as_double() / t.seconds() * bus_bandwidth_factor(op.kind, ranks.size()) * 1e-9;
  switch (measure) {
    case Measure::kBusbw:
      return busbw;
    case Measure::kBusbwPerNic:
      return busbw / s.nics_per_node;
    case Measure::kTimeUs:
      return t.seconds() * 1e6;
    case Measure::kTflopsPerGpu:
    case Measure::kTtftMs:
    case Measure::kTpotMs:
    case Measure::kPromptTokensPerS:
    case Measure::kOutputTokensPerS:
      break;
  }
  throw std::logic_error("simulate_collective: a collective case measures a step (a bug)");
}

// A serving case: the pass it measures, as `stepsim serve` runs it (TTFT: the prefill pass and
// the KV transfer when the pools are apart).
double simulate_serving(const Case& c, std::string* setup, ServingPassCache* cache) {
  const bool prefill = c.measure == Measure::kTtftMs || c.measure == Measure::kPromptTokensPerS;
  std::string key = c.scenario->string() + (prefill ? " prefill" : " decode");
  for (const auto& o : c.overrides)
    key += " " + o;
  std::pair<double, double> figures;
  std::string text;
  if (cache != nullptr && cache->figures.contains(key)) {
    figures = cache->figures[key];
    text = cache->setups[key];
  } else {
    const ServingScenario scenario = load_serving_scenario(*c.scenario, c.overrides);
    const workloads::ServingPhase phase =
        prefill ? workloads::ServingPhase::kPrefill : workloads::ServingPhase::kDecode;
    const auto& pool = prefill ? scenario.serving.prefill : scenario.serving.decode;
    if (!pool) {
      throw InputError(fmt::format("{}: measure {} needs a serving.{} pool", c.scenario->string(),
                                   to_string(c.measure), workloads::to_string(phase)));
    }
    const PassReport pass = simulate_pass(scenario, phase, pool->batch);
    Time time = pass.time;
    if (prefill) {
      if (const auto kv = simulate_kv_transfer(scenario)) time += kv->time;
    }
    figures = {time.seconds(), pass.tokens_per_s_per_accelerator};
    const workloads::ServingSpec& serving = scenario.serving;
    text =
        fmt::format("{} {}, {}, batch {}, {} {}", serving.model.name, workloads::to_string(phase),
                    pass.layout, pass.batch, pass.tokens, prefill ? "prompt" : "context");
    if (!prefill && serving.mtp.depth > 0)
      text += fmt::format(", MTP depth {} at {:.2g}", serving.mtp.depth, serving.mtp.acceptance);
    text += fmt::format(" on {}", scenario.topology_spec);
    if (pass.memory.total() > pass.memory.capacity) text += " (exceeds HBM)";
    if (cache != nullptr) {
      cache->figures[key] = figures;
      cache->setups[key] = text;
    }
  }
  if (setup) *setup = text;
  switch (c.measure) {
    case Measure::kTtftMs:
    case Measure::kTpotMs:
      return figures.first * 1e3;
    default:
      return figures.second;
  }
}

}  // namespace

std::vector<const RowResult*> TableResult::failures() const {
  std::vector<const RowResult*> out;
  if (!source || !source->target) return out;
  for (const RowResult& r : rows) {
    const bool over = std::abs(r.error) > 2 * *source->target;
    if (over == r.source->known_gap.empty()) out.push_back(&r);
  }
  return out;
}

double simulate_case(const Case& c, std::string* setup, ServingPassCache* cache) {
  if (c.collective) return simulate_collective(*c.collective, c.measure, setup);
  if (is_serving(c.measure)) return simulate_serving(c, setup, cache);
  const Scenario scenario = load_scenario(*c.scenario, c.overrides);
  const StepReport report = simulate_step(scenario);
  if (setup) {
    *setup = fmt::format("{}, {} on {}", report.model, report.layout, scenario.topology_spec);
    // An assumption that would not fit in memory is not what the source ran: say so.
    Bytes peak(0);
    for (const auto& m : report.memory)
      if (m.exceeds_capacity) peak = std::max(peak, m.total);
    if (peak.count() > 0)
      *setup += fmt::format(" (needs {} per GPU: exceeds HBM)", format_bytes(peak));
  }
  return report.tflops_per_accelerator;
}

std::vector<TableResult> run_cases(const CaseFile& cases, const RunOptions& options) {
  std::vector<TableResult> results;
  ServingPassCache serving;
  for (const Table& table : cases.tables) {
    TableResult result;
    result.source = &table;
    for (const Case& c : table.cases) {
      if (options.quick_only && !c.quick) continue;
      if (options.on_case) options.on_case(table, c);
      RowResult row;
      row.source = &c;
      try {
        row.simulated = simulate_case(c, &row.setup, &serving);
      } catch (const InputError& e) {
        // The setup (topology, ranks, op, algo, scenario) is checked as it runs: say which case.
        throw InputError(fmt::format("{} ('{}'): {}", c.where, c.figure, e.what()));
      }
      row.error = (row.simulated - c.published.value) / c.published.value;
      result.rows.push_back(std::move(row));
    }
    double sum = 0;
    for (const RowResult& r : result.rows) {
      sum += std::abs(r.error);
      result.worst_abs_error = std::max(result.worst_abs_error, std::abs(r.error));
    }
    if (!result.rows.empty()) result.mean_abs_error = sum / static_cast<double>(result.rows.size());
    results.push_back(std::move(result));
  }
  return results;
}

}  // namespace stepsim::validation
