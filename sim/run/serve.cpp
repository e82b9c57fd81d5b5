#include "sim/run/serve.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <ostream>
#include <utility>
#include <vector>

#include "sim/collectives/plan/plan.hpp"
#include "sim/collectives/runner/collective_session.hpp"
#include "sim/collectives/runner/placement.hpp"
#include "sim/common/input_error.hpp"
#include "sim/run/simulate.hpp"
#include "sim/run/step_report.hpp"
#include "sim/scenario/serving_scenario.hpp"
#include "stepsim/version.hpp"
#include "workloads/operation.hpp"
#include "workloads/step_generator.hpp"
#include "workloads/workload.hpp"

namespace stepsim {

using workloads::ServingPhase;

namespace {

std::string pool_layout(const workloads::ServingPool& pool) {
  std::string text = fmt::format("tp{} dp{}", pool.tp, pool.replicas());
  if (pool.ep > 1) text += fmt::format(" ep{}", pool.ep);
  if (pool.micro_batches > 1) text += fmt::format(", {} micro-batches", pool.micro_batches);
  return text;
}

// "0-31,64-95": the accelerators in rank order, consecutive runs as ranges.
std::string ranges_text(const std::vector<std::uint32_t>& indices) {
  std::string text;
  for (std::size_t i = 0; i < indices.size();) {
    std::size_t j = i;
    while (j + 1 < indices.size() && indices[j + 1] == indices[j] + 1)
      ++j;
    if (!text.empty()) text += ',';
    text += j == i ? fmt::format("{}", indices[i]) : fmt::format("{}-{}", indices[i], indices[j]);
    i = j + 1;
  }
  return text;
}

std::string precision_text(workloads::Precision p) {
  return std::string(workloads::to_string(p));
}

}  // namespace

PassReport simulate_pass(const ServingScenario& scenario, ServingPhase phase, std::int64_t batch,
                         const PassRecording& recording) {
  const workloads::ServingSpec& serving = scenario.serving;
  const workloads::ServingPool& pool = serving.pool(phase);
  // With two micro-batches, the traffic matrices of skewed routing (Workload) are those of one.
  const std::int64_t per_micro_batch =
      pool.micro_batches == 2 && batch > 1 ? batch - batch / 2 : batch;
  workloads::WorkloadSpec spec = workloads::serving_workload(serving, phase, per_micro_batch);
  std::vector<workloads::Program> programs;
  programs.push_back(workloads::serving_program(serving, phase, batch));
  const workloads::Workload workload(std::move(spec), std::move(programs));
  const topology::Topology& topo = scenario.topology;
  executor::ExecutorOptions options;
  options.network = scenario.network;
  options.detail_ranks = {0};
  options.rank_accelerators = pool.placement;

  // As simulate_step: a first run finds the busiest links, whose samples the second records.
  std::vector<std::uint32_t> trace_links;
  std::vector<std::uint32_t> view_links;
  const std::size_t view_link_count = recording.view != nullptr ? recording.view_links : 0;
  if (recording.trace != nullptr || view_link_count > 0) {
    executor::Executor first(workload, topo, options);
    first.run();
    trace_links = busiest_links(first, topo, recording.trace ? recording.trace_links : 0);
    view_links = busiest_links(first, topo, view_link_count);
  }
  sample_links(options, trace_links, view_links);
  std::optional<TraceListener> trace;
  if (recording.trace != nullptr) {
    std::vector<int> ranks = parse_trace_ranks(recording.trace_ranks, workload);
    if (!ranks.empty() && recording.trace_ranks == "auto" && recording.note)
      recording.note(fmt::format(
          "the trace shows {} of the {} ranks of the {} pool (whole replicas from replica 0); "
          "--trace-ranks all shows every rank",
          ranks.size(), workload.world_size(), workloads::to_string(phase)));
    TraceProcesses processes = recording.processes;
    processes.rank_accelerators = pool.placement;
    trace.emplace(*recording.trace, workload, topo, std::move(ranks), std::move(processes));
  }
  std::optional<StepViewRecorder> recorder;
  if (recording.view != nullptr) {
    recorder.emplace(workload, topo, parse_view_ranks(recording.view_ranks, workload),
                     trace ? &*trace : nullptr, pool.placement);
  }
  executor::OpListener* listener = nullptr;
  if (recorder) {
    listener = &*recorder;
  } else if (trace) {
    listener = &*trace;
  }
  executor::Executor executor(workload, topo, options, listener);
  const executor::ExecutionResult result = executor.run();
  if (recording.view != nullptr) {
    StepView& view = *recording.view;
    view = StepView{};
    view.step_time = result.step_time;
    view.ranks = recorder->take();
    view.stages.push_back({0, result.breakdowns.at(0)});
    add_link_views(view, topo, executor, view_links, result.step_time, recording.view_bins);
  }
  if (trace) trace->finish(executor, trace_links);

  PassReport r;
  r.phase = phase;
  r.layout = pool_layout(pool);
  r.accelerators = pool.accelerators;
  r.batch = batch;
  r.tokens = pool.tokens;
  r.placement = ranges_text(pool.placement);
  r.step = result.step_time;
  r.time = r.step;
  const bool decode = phase == ServingPhase::kDecode;
  // With MTP a step yields tokens_per_step tokens per sequence on average: the time per output
  // token is the step over them (CloudMatrix-Infer's TPOT: the batch over its tokens/s).
  if (decode) r.tokens_per_step = serving.mtp.tokens_per_step();
  if (r.tokens_per_step != 1) r.time = Time::from_seconds(r.step.seconds() / r.tokens_per_step);
  const double tokens_per_replica = decode ? static_cast<double>(batch) * r.tokens_per_step
                                           : static_cast<double>(batch * pool.tokens);
  if (r.step > Time::zero())
    r.tokens_per_s_per_accelerator = tokens_per_replica / (r.step.seconds() * pool.tp);
  r.breakdown = result.breakdowns.at(0);
  r.memory = workloads::serving_memory(serving, phase, batch);
  r.operations = result.operations;
  return r;
}

TpotSearch search_tpot(const ServingScenario& scenario, Time limit) {
  TpotSearch search;
  search.limit = limit;
  const std::int64_t fits =
      workloads::serving_memory(scenario.serving, ServingPhase::kDecode, 1).max_batch;
  if (fits < 1) return search;
  auto run = [&](std::int64_t batch) {
    ++search.simulated;
    return simulate_pass(scenario, ServingPhase::kDecode, batch);
  };
  PassReport low = run(1);
  if (low.time > limit) {
    search.next = std::move(low);
    return search;
  }
  PassReport top = run(fits);
  if (top.time <= limit) {
    search.best = std::move(top);
    return search;
  }
  // Invariant: low meets the limit, high does not, low.batch < high.batch.
  PassReport high = std::move(top);
  while (high.batch - low.batch > 1) {
    const std::int64_t mid = low.batch + (high.batch - low.batch) / 2;
    PassReport probe = run(mid);
    if (probe.time <= limit) {
      low = std::move(probe);
    } else {
      high = std::move(probe);
    }
  }
  search.best = std::move(low);
  search.next = std::move(high);
  return search;
}

DecodeLoad size_decode_batch(double rate_per_s, std::int64_t output_tokens, int replicas,
                             double colocated_prefill_s_per_request, std::int64_t max_batch,
                             const std::function<Time(std::int64_t)>& tpot) {
  DecodeLoad load;
  const double share = 1.0 - rate_per_s * colocated_prefill_s_per_request;
  load.share = share;
  load.max_batch = max_batch;
  if (max_batch < 1) {
    load.overloaded = true;  // the weights alone do not fit
    return load;
  }
  // Sequences in flight per replica for one second of TPOT.
  const double per_tpot_second =
      rate_per_s * static_cast<double>(output_tokens) / (static_cast<double>(replicas) * share);
  auto in_flight = [&](Time t) { return per_tpot_second * t.seconds(); };
  auto evaluate = [&](std::int64_t batch) {
    ++load.simulated;
    return tpot(batch);
  };
  auto settle = [&](std::int64_t batch, Time t) {
    load.batch = batch;
    load.tpot = t;
    load.in_flight = in_flight(t);
  };
  load.max_batch_tpot = evaluate(max_batch);
  const double max_in_flight = static_cast<double>(max_batch) * static_cast<double>(replicas);
  if (load.max_batch_tpot > Time::zero()) {
    load.sustainable_rate_per_s =
        max_in_flight / (static_cast<double>(output_tokens) * load.max_batch_tpot.seconds() +
                         max_in_flight * colocated_prefill_s_per_request);
  }
  if (in_flight(load.max_batch_tpot) > static_cast<double>(max_batch)) {
    load.overloaded = true;
    settle(max_batch, load.max_batch_tpot);
    return load;
  }
  if (max_batch == 1) {
    settle(1, load.max_batch_tpot);
    return load;
  }
  const Time one = evaluate(1);
  if (in_flight(one) <= 1.0) {
    settle(1, one);
    return load;
  }
  // Invariant: `low` does not keep up, `high` does, low < high.
  std::int64_t low = 1;
  std::int64_t high = max_batch;
  Time high_tpot = load.max_batch_tpot;
  while (high - low > 1) {
    const std::int64_t mid = low + (high - low) / 2;
    const Time t = evaluate(mid);
    if (in_flight(t) <= static_cast<double>(mid)) {
      high = mid;
      high_tpot = t;
    } else {
      low = mid;
    }
  }
  settle(high, high_tpot);
  return load;
}

namespace {

// The request mix's figures from the simulated prefill pass (and KV transfer), and the decode
// batch that keeps up, searched on simulated decode steps.
RequestLoad request_load(const ServingScenario& scenario, const ServeReport& report) {
  const workloads::ServingSpec& serving = scenario.serving;
  RequestLoad load;
  load.mix = *serving.requests;
  const double rate = load.mix.rate_per_s;
  double prefill_s_per_request = 0;  // colocated: the accelerators' prefill time per request
  if (serving.prefill && report.prefill) {
    PrefillLoad p;
    p.pass = report.prefill->time;
    p.kv_transfer = report.kv_transfer ? report.kv_transfer->time : Time{};
    p.ttft_at_least = report.ttft;
    const double requests_per_pass =
        static_cast<double>(serving.prefill->batch * serving.prefill->replicas());
    if (p.pass > Time::zero()) {
      p.sustainable_rate_per_s = requests_per_pass / p.pass.seconds();
      p.utilisation = rate / p.sustainable_rate_per_s;
    }
    p.overloaded = p.utilisation > 1.0;
    if (serving.colocated) prefill_s_per_request = p.pass.seconds() / requests_per_pass;
    load.prefill = p;
  }
  if (serving.decode) {
    if (rate * prefill_s_per_request >= 1.0) {
      load.no_time_for_decode = true;
    } else {
      const std::int64_t fits =
          workloads::serving_memory(serving, ServingPhase::kDecode, 1).max_batch;
      load.decode =
          size_decode_batch(rate, load.mix.output_tokens, serving.decode->replicas(),
                            prefill_s_per_request, fits, [&](std::int64_t batch) {
                              return simulate_pass(scenario, ServingPhase::kDecode, batch).time;
                            });
    }
  }
  return load;
}

}  // namespace

std::optional<KvTransferReport> simulate_kv_transfer(const ServingScenario& scenario) {
  const workloads::ServingSpec& serving = scenario.serving;
  const std::vector<workloads::KvTransfer> transfers = workloads::kv_transfers(serving);
  if (transfers.empty()) return std::nullopt;
  const topology::Topology& topo = scenario.topology;
  KvTransferReport report;
  report.plane = serving.kv_plane;
  report.flows = transfers.size();
  // The node each accelerator sends from and receives at: itself, or its first NIC.
  auto endpoint = [&](std::uint32_t accelerator) {
    const topology::NodeId node = topo.accelerators()[accelerator];
    if (serving.kv_plane == workloads::KvTransferPlane::kScaleUp) return node;
    const auto nics = topo.nics(node);
    if (nics.empty()) {
      throw InputError(fmt::format(
          "{}: serving.kv_transfer_plane: scale-out, but accelerator {} ({}) of topology '{}' "
          "has no NIC",
          serving.serving_location, accelerator, topo.name(node), topo.name()));
    }
    return nics.front().nic;
  };
  collectives::Placement placement;
  std::map<std::uint32_t, std::uint32_t> member_of;  // node id -> plan member
  auto member = [&](std::uint32_t accelerator) {
    const topology::NodeId node = endpoint(accelerator);
    const auto [it, added] =
        member_of.emplace(node.value(), static_cast<std::uint32_t>(placement.members.size()));
    if (added) placement.members.push_back(node);
    return collectives::Endpoint::member(it->second);
  };
  collectives::PlanBuilder plan;
  plan.reserve(transfers.size(), 0);
  std::map<std::int64_t, Bytes> per_request;
  for (const workloads::KvTransfer& t : transfers) {
    collectives::Transfer flow;
    flow.src = member(t.from);
    flow.dst = member(t.to);
    flow.bytes = t.bytes;
    plan.add(flow);
    report.bytes += t.bytes;
    per_request[t.request] += t.bytes;
  }
  report.requests = static_cast<std::int64_t>(per_request.size());
  for (const auto& [request, bytes] : per_request)
    report.bytes_per_request = std::max(report.bytes_per_request, bytes);
  collectives::CollectiveSession session(topo, scenario.network.calibration,
                                         scenario.network.runner);
  report.time = session.run(std::make_shared<const collectives::Plan>(
                                std::move(plan).finish(collectives::Reduction::kNone)),
                            placement);
  return report;
}

ServeReport make_serve_report(const ServingScenario& scenario, std::optional<Time> tpot_limit,
                              const ServeRecording& recording, ServeViews* views) {
  const workloads::ServingSpec& serving = scenario.serving;
  // The trace starts before the simulations, so a bad path fails at once.
  std::optional<output::TraceWriter> trace;
  if (recording.trace) trace.emplace(*recording.trace, recording.output_guard);
  auto recording_of = [&](ServingPhase phase, int first_pid) {
    PassRecording r;
    if (trace) r.trace = &*trace;
    r.processes.first_pid = first_pid;
    r.processes.name_prefix = fmt::format("{}: ", workloads::to_string(phase));
    r.trace_ranks = recording.trace_ranks;
    r.view_ranks = recording.view_ranks;
    r.note = recording.note;
    if (views != nullptr && recording.views) {
      auto& view = phase == ServingPhase::kPrefill ? views->prefill : views->decode;
      r.view = &view.emplace();
    }
    return r;
  };
  ServeReport report;
  report.scenario = scenario.name;
  report.topology = scenario.topology_spec;
  report.model = serving.model.name;
  report.device = serving.compute.device.name;
  report.precision = precision_text(serving.precision);
  report.kv_cache = precision_text(serving.kv_cache);
  report.combine = precision_text(serving.combine);
  report.hbm_efficiency = serving.compute.memory_efficiency;
  report.colocated = serving.colocated;
  report.mtp_depth = serving.mtp.depth;
  report.mtp_acceptance = serving.mtp.acceptance;
  report.resolved_scenario = to_json(scenario.document.root());
  // Process ids in the trace: the prefill ranks, its links' counters, then the decode ranks.
  const int decode_first_pid = serving.prefill ? serving.prefill->accelerators + 1 : 0;
  if (serving.prefill) {
    report.prefill = simulate_pass(scenario, ServingPhase::kPrefill, serving.prefill->batch,
                                   recording_of(ServingPhase::kPrefill, 0));
    report.kv_transfer = simulate_kv_transfer(scenario);
    report.ttft = report.prefill->time + (report.kv_transfer ? report.kv_transfer->time : Time{});
  }
  if (serving.decode) {
    report.decode = simulate_pass(scenario, ServingPhase::kDecode, serving.decode->batch,
                                  recording_of(ServingPhase::kDecode, decode_first_pid));
    if (tpot_limit) report.search = search_tpot(scenario, *tpot_limit);
  }
  if (serving.requests) report.load = request_load(scenario, report);
  if (trace) trace->close();
  return report;
}

namespace {

std::string rate_text(double per_s) {
  return fmt::format("{:.4g}/s", per_s);
}

}  // namespace

std::string request_mix_text(const workloads::RequestMix& mix) {
  return fmt::format(
      "{} input and {} output tokens per request, {}{}", mix.input_tokens, mix.output_tokens,
      mix.rate_text,
      mix.rate_text.ends_with("/s") ? "" : fmt::format(" ({})", rate_text(mix.rate_per_s)));
}

std::vector<std::pair<std::string, std::string>> request_load_lines(const RequestLoad& load,
                                                                    bool colocated) {
  std::vector<std::pair<std::string, std::string>> lines;
  if (load.prefill) {
    const PrefillLoad& p = *load.prefill;
    lines.emplace_back(
        "prefill utilisation",
        fmt::format("{:.3f}{} (sustains {}{})", p.utilisation, p.overloaded ? ": OVERLOADED" : "",
                    rate_text(p.sustainable_rate_per_s),
                    colocated ? " with the accelerators to itself" : ""));
    lines.emplace_back(
        "TTFT at this load",
        p.overloaded
            ? std::string("unbounded: the prefill pool is overloaded, its queue grows")
            : fmt::format("at least {} (the pass{}; waiting for a batch and for a busy pool not "
                          "modelled)",
                          format_time(p.ttft_at_least),
                          p.kv_transfer > Time::zero() ? " and the KV transfer" : ""));
  }
  if (load.no_time_for_decode) {
    lines.emplace_back("decode share of the accelerators",
                       "none: the colocated prefill takes all the time");
  }
  if (!load.decode) return lines;
  const DecodeLoad& d = *load.decode;
  if (d.share != 1.0) {
    lines.emplace_back(
        "decode share of the accelerators",
        fmt::format("{:.3f} (colocated: the rest of the time runs prefill passes)", d.share));
  }
  if (d.max_batch < 1) {
    lines.emplace_back("decode batch per replica",
                       "OVERLOADED: the weights alone do not fit in memory");
    return lines;
  }
  lines.emplace_back(
      "decode batch per replica",
      d.overloaded ? fmt::format("OVERLOADED: at the largest batch that fits, {} (TPOT {}), {:.1f} "
                                 "sequences would be in flight per replica",
                                 d.batch, format_time(d.tpot), d.in_flight)
                   : fmt::format("{} (TPOT {}: {:.1f} sequences in flight per replica)", d.batch,
                                 format_time(d.tpot), d.in_flight));
  lines.emplace_back(
      "decode sustains up to",
      fmt::format("{} (at batch {}, the largest that fits: TPOT {})",
                  rate_text(d.sustainable_rate_per_s), d.max_batch, format_time(d.max_batch_tpot)));
  return lines;
}

namespace {

std::string gb(Bytes b) {
  return fmt::format("{:.2f} GB", b.as_double() * 1e-9);
}

void print_pass(std::ostream& out, const PassReport& p, bool apart,
                const std::optional<KvTransferReport>& kv, Time ttft) {
  const bool decode = p.phase == ServingPhase::kDecode;
  out << fmt::format("{} pool: {} accelerators, {}, batch {} per replica, {} {} tokens\n",
                     decode ? "Decode" : "Prefill", p.accelerators, p.layout, p.batch,
                     decode ? "context" : "prompt", p.tokens);
  if (apart) out << fmt::format("  {:<34}{}\n", "accelerators", p.placement);
  if (decode) {
    if (p.tokens_per_step != 1) {
      out << fmt::format("  {:<34}{} ({:.3f} tokens per sequence on average)\n", "decode step",
                         format_time(p.step), p.tokens_per_step);
    }
    out << fmt::format("  {:<34}{}\n", "time per output token (TPOT)", format_time(p.time));
  } else if (kv) {
    out << fmt::format("  {:<34}{}\n", "prefill pass", format_time(p.time));
    out << fmt::format("  {:<34}{} ({:.2f} GB, {} requests, {:.1f} MB each, {} plane)\n",
                       "KV transfer to decode", format_time(kv->time), kv->bytes.as_double() * 1e-9,
                       kv->requests, kv->bytes_per_request.as_double() * 1e-6,
                       workloads::to_string(kv->plane));
    out << fmt::format("  {:<34}{}\n", "time to first token (TTFT)", format_time(ttft));
  } else {
    out << fmt::format("  {:<34}{}\n", "time to first token (TTFT)", format_time(p.time));
  }
  out << fmt::format("  {:<34}{:.1f}\n",
                     decode ? "output tokens/s per accelerator" : "prompt tokens/s per accelerator",
                     p.tokens_per_s_per_accelerator);
  std::string parts = fmt::format("compute {}", format_time(p.breakdown.compute));
  for (std::size_t d = 1; d < executor::kDimensionCount; ++d) {
    if (p.breakdown.exposed[d] <= Time::zero()) continue;
    parts += fmt::format(", {} {}", workloads::to_string(static_cast<workloads::ParallelDim>(d)),
                         format_time(p.breakdown.exposed[d]));
  }
  const Time other = p.breakdown.wait + p.breakdown.idle + p.breakdown.bubble;
  if (other > Time::zero()) parts += fmt::format(", waiting {}", format_time(other));
  out << fmt::format("  {:<34}{}\n", "rank 0's time", parts);
  const auto& m = p.memory;
  out << fmt::format("  {:<34}weights {}, KV cache {}, activations {}: {} of {}{}\n",
                     "memory per accelerator", gb(m.weights), gb(m.kv_cache), gb(m.activations),
                     gb(m.total()), gb(m.capacity), m.total() > m.capacity ? " (EXCEEDS)" : "");
  out << fmt::format("  {:<34}{}\n", "largest batch that fits", m.max_batch);
}

void print_load(std::ostream& out, const RequestLoad& load, bool colocated) {
  out << "Request mix: " << request_mix_text(load.mix) << '\n';
  for (const auto& [name, value] : request_load_lines(load, colocated))
    out << fmt::format("  {:<34}{}\n", name, value);
  if (load.decode && load.decode->max_batch > 0)
    out << fmt::format("  ({} decode steps simulated)\n", load.decode->simulated);
}

nlohmann::ordered_json load_json(const RequestLoad& load) {
  using json = nlohmann::ordered_json;
  json j;
  j["input_tokens"] = load.mix.input_tokens;
  j["output_tokens"] = load.mix.output_tokens;
  j["rate_per_s"] = load.mix.rate_per_s;
  if (load.prefill) {
    const PrefillLoad& p = *load.prefill;
    json pj;
    pj["pass_s"] = p.pass.seconds();
    pj["kv_transfer_s"] = p.kv_transfer.seconds();
    pj["utilisation"] = p.utilisation;
    pj["overloaded"] = p.overloaded;
    pj["sustainable_rate_per_s"] = p.sustainable_rate_per_s;
    pj["ttft_at_least_s"] = p.ttft_at_least.seconds();
    j["prefill"] = pj;
  } else {
    j["prefill"] = nullptr;
  }
  if (load.decode) {
    const DecodeLoad& d = *load.decode;
    json dj;
    dj["batch_per_replica"] = d.batch;
    dj["tpot_s"] = d.tpot.seconds();
    dj["in_flight_per_replica"] = d.in_flight;
    dj["overloaded"] = d.overloaded;
    dj["share"] = d.share;
    dj["max_batch"] = d.max_batch;
    dj["max_batch_tpot_s"] = d.max_batch_tpot.seconds();
    dj["sustainable_rate_per_s"] = d.sustainable_rate_per_s;
    dj["simulated"] = d.simulated;
    j["decode"] = dj;
  } else {
    j["decode"] = nullptr;
  }
  if (load.no_time_for_decode) j["no_time_for_decode"] = true;
  return j;
}

nlohmann::ordered_json pass_json(const PassReport& p) {
  using json = nlohmann::ordered_json;
  json j;
  j["phase"] = std::string(workloads::to_string(p.phase));
  j["layout"] = p.layout;
  j["accelerators"] = p.accelerators;
  j["batch_per_replica"] = p.batch;
  j[p.phase == ServingPhase::kDecode ? "context_tokens" : "prompt_tokens"] = p.tokens;
  j["placement"] = p.placement;
  j["time_s"] = p.time.seconds();
  j["time_ps"] = p.time.picoseconds();
  if (p.tokens_per_step != 1) {
    j["step_time_s"] = p.step.seconds();
    j["tokens_per_step"] = p.tokens_per_step;
  }
  j["tokens_per_s_per_accelerator"] = p.tokens_per_s_per_accelerator;
  json breakdown;
  breakdown["compute_s"] = p.breakdown.compute.seconds();
  breakdown["exposed_communication_s"] = exposed_json(p.breakdown.exposed);
  breakdown["wait_s"] = p.breakdown.wait.seconds();
  breakdown["idle_s"] = p.breakdown.idle.seconds();
  j["rank0"] = breakdown;
  json memory;
  memory["weights_bytes"] = p.memory.weights.count();
  memory["kv_cache_bytes"] = p.memory.kv_cache.count();
  memory["activation_bytes"] = p.memory.activations.count();
  memory["total_bytes"] = p.memory.total().count();
  memory["capacity_bytes"] = p.memory.capacity.count();
  memory["max_batch"] = p.memory.max_batch;
  j["memory_per_accelerator"] = memory;
  j["operations"] = p.operations;
  return j;
}

}  // namespace

void print_serve_summary(std::ostream& out, const ServeReport& r) {
  out << fmt::format(
      "Serving '{}' on {}: {} on {}, {} weights, {} KV cache (HBM efficiency {:.3f})\n", r.scenario,
      r.topology, r.model, r.device, r.precision, r.kv_cache, r.hbm_efficiency);
  if (r.combine != r.precision) out << fmt::format("Expert combine in {}\n", r.combine);
  if (r.mtp_depth > 0) {
    out << fmt::format(
        "Speculative decoding: MTP depth {}, acceptance {:.3g}: each decode step runs {} tokens "
        "per sequence\n",
        r.mtp_depth, r.mtp_acceptance, 1 + r.mtp_depth);
  }
  const bool apart = r.prefill && r.decode && !r.colocated;
  if (r.prefill) print_pass(out, *r.prefill, apart, r.kv_transfer, r.ttft);
  if (r.decode) print_pass(out, *r.decode, apart, std::nullopt, Time{});
  if (r.search) {
    const TpotSearch& s = *r.search;
    out << fmt::format("TPOT limit {}: ", format_time(s.limit));
    if (!s.best && !s.next) {
      out << "the weights alone do not fit in memory\n";
    } else if (!s.best) {
      out << fmt::format("no batch meets it (batch 1: {})\n", format_time(s.next->time));
    } else {
      out << fmt::format("largest batch {} (TPOT {}, {:.1f} output tokens/s per accelerator)",
                         s.best->batch, format_time(s.best->time),
                         s.best->tokens_per_s_per_accelerator);
      if (s.next) {
        out << fmt::format("; batch {}: {}\n", s.next->batch, format_time(s.next->time));
      } else {
        out << "; the largest batch that fits in memory\n";
      }
    }
    out << fmt::format("  ({} decode steps simulated)\n", s.simulated);
  }
  if (r.load) print_load(out, *r.load, r.colocated);
}

nlohmann::ordered_json to_json(const ServeReport& r) {
  using json = nlohmann::ordered_json;
  json j;
  j["stepsim_version"] = kVersion;
  j["scenario"] = r.scenario;
  j["topology"] = r.topology;
  j["model"] = r.model;
  j["device"] = r.device;
  j["precision"] = r.precision;
  j["kv_cache_dtype"] = r.kv_cache;
  j["combine_dtype"] = r.combine;
  j["hbm_efficiency"] = r.hbm_efficiency;
  if (r.mtp_depth > 0) j["mtp"] = {{"depth", r.mtp_depth}, {"acceptance", r.mtp_acceptance}};
  j["prefill"] = r.prefill ? pass_json(*r.prefill) : json(nullptr);
  j["decode"] = r.decode ? pass_json(*r.decode) : json(nullptr);
  if (r.kv_transfer) {
    json kv;
    kv["plane"] = std::string(workloads::to_string(r.kv_transfer->plane));
    kv["requests"] = r.kv_transfer->requests;
    kv["flows"] = r.kv_transfer->flows;
    kv["bytes"] = r.kv_transfer->bytes.count();
    kv["bytes_per_request"] = r.kv_transfer->bytes_per_request.count();
    kv["time_s"] = r.kv_transfer->time.seconds();
    j["kv_transfer"] = kv;
  }
  if (r.prefill) j["ttft_s"] = r.ttft.seconds();
  if (r.decode) j["tpot_s"] = r.decode->time.seconds();
  if (r.search) {
    json s;
    s["limit_s"] = r.search->limit.seconds();
    s["best"] = r.search->best ? pass_json(*r.search->best) : json(nullptr);
    s["next"] = r.search->next ? pass_json(*r.search->next) : json(nullptr);
    s["simulated"] = r.search->simulated;
    j["tpot_search"] = s;
  }
  if (r.load) j["requests"] = load_json(*r.load);
  return j;
}

}  // namespace stepsim
