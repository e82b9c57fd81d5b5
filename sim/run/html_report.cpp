#include "sim/run/html_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <ostream>

#include "sim/output/html_charts.hpp"
#include "sim/run/serve.hpp"
#include "stepsim/version.hpp"

namespace stepsim {
namespace {

namespace html = output::html;
using workloads::ParallelDim;

constexpr std::size_t kDims = workloads::kParallelDimCount;

// One color per activity, the same in every chart (Tableau 10).
constexpr std::string_view kComputeColor = "#4e79a7";
constexpr std::array<std::string_view, kDims> kDimColor = {
    "#999999", "#f28e2b", "#edc948", "#59a14f", "#e15759", "#b07aa1", "#76b7b2"};
constexpr std::string_view kBubbleColor = "#ff9da7";
constexpr std::string_view kWaitColor = "#bab0ac";
constexpr std::string_view kIdleColor = "#e4e4e4";

std::string dim_name(std::size_t d) {
  return std::string(workloads::to_string(static_cast<ParallelDim>(d)));
}

std::string seconds_text(Time t) {
  return html::format_seconds(t.seconds());
}

// Figures of the page's first table.
std::vector<std::vector<std::string>> summary_rows(const StepReport& r) {
  return {
      {"scenario", r.scenario},
      {"topology", fmt::format("{} ({} accelerators)", r.topology, r.world_size)},
      {"model", r.model},
      {"layout", r.layout},
      {"step time", format_time(r.step_time)},
      {"throughput",
       fmt::format("{:.0f} tokens/s, {:.2f} samples/s", r.tokens_per_s, r.samples_per_s)},
      {"model FLOP/s", fmt::format("{:.1f} TFLOP/s per accelerator, MFU {:.1f}% (peak {:.0f})",
                                   r.tflops_per_accelerator, 100 * r.mfu, r.peak_tflops)},
      {"simulation",
       fmt::format("{} operations, {} transfers, {} events", r.operations, r.flows, r.events)},
  };
}

// Stacked bars of where the time went, one bar per breakdown; dimensions without exposed time on
// any bar are left out.
html::BarChart breakdown_chart(std::string id, std::string title,
                               const std::vector<std::string>& categories,
                               const std::vector<executor::RankBreakdown>& parts) {
  html::BarChart chart;
  chart.id = std::move(id);
  chart.title = std::move(title);
  chart.y_label = "time";
  chart.categories = categories;
  chart.format = html::format_seconds;
  auto add = [&](std::string name, std::string_view color, auto get) {
    html::Series s{std::move(name), std::string(color), {}};
    bool any = false;
    for (const auto& p : parts) {
      s.values.push_back(get(p).seconds());
      any = any || get(p) > Time::zero();
    }
    if (any) chart.series.push_back(std::move(s));
  };
  add("compute", kComputeColor, [](const executor::RankBreakdown& p) { return p.compute; });
  for (std::size_t d = 1; d < kDims; ++d) {
    add("exposed " + dim_name(d), kDimColor[d],
        [d](const executor::RankBreakdown& p) { return p.exposed[d]; });
  }
  add("pipeline bubble", kBubbleColor, [](const executor::RankBreakdown& p) { return p.bubble; });
  add("waiting for peers", kWaitColor, [](const executor::RankBreakdown& p) { return p.wait; });
  add("idle", kIdleColor, [](const executor::RankBreakdown& p) { return p.idle; });
  return chart;
}

// The timeline: per shown rank, one row per stream that ran something. A communication's wait
// before it started is drawn on its row as a bubble (pipeline send or receive) or as waiting for
// the group (collective).
html::Timeline timeline_chart(const StepView& view) {
  html::Timeline chart;
  chart.id = "timeline";
  chart.title = fmt::format("Step timeline of {} rank{}", view.ranks.size(),
                            view.ranks.size() == 1 ? "" : "s");
  chart.end_s = view.step_time.seconds();
  chart.kinds.push_back({"compute", std::string(kComputeColor)});
  for (std::size_t d = 1; d < kDims; ++d)
    chart.kinds.push_back({dim_name(d), std::string(kDimColor[d])});
  const int bubble = static_cast<int>(chart.kinds.size());
  chart.kinds.push_back(
      {"pipeline bubble (waiting for the peer stage)", std::string(kBubbleColor)});
  const int wait = bubble + 1;
  chart.kinds.push_back({"waiting for the group or peer", std::string(kWaitColor)});
  constexpr auto kStreams = static_cast<std::size_t>(workloads::Stream::kCount);
  for (const RankView& rank : view.ranks) {
    std::array<html::TimelineRow, kStreams> rows;
    for (std::size_t s = 0; s < kStreams; ++s) {
      rows[s].group = rank.name;
      rows[s].label = std::string(workloads::to_string(static_cast<workloads::Stream>(s)));
    }
    for (const ViewSpan& span : rank.spans) {
      auto& row = rows[static_cast<std::size_t>(span.stream)];
      const double duration = (span.end - span.start).seconds();
      if (span.kind == workloads::OpKind::kCompute) {
        row.spans.push_back(
            {span.start.seconds(), span.end.seconds(), 0, span.label,
             fmt::format("{} \u00b7 compute {} \u00b7 {:.3g} TFLOP, {} from HBM \u00b7 at {}",
                         span.label, html::format_seconds(duration), span.flops * 1e-12,
                         html::format_bytes_decimal(static_cast<double>(span.bytes)),
                         seconds_text(span.start))});
        continue;
      }
      // A pipeline send or receive waiting for its peer stage is a bubble (as the breakdown
      // counts it); any other wait is for the group or the peer.
      const bool point_to_point = span.kind != workloads::OpKind::kCollective;
      const bool pipeline = point_to_point && span.dim == ParallelDim::kPp;
      if (span.start > span.issued) {
        row.spans.push_back(
            {span.issued.seconds(), span.start.seconds(), pipeline ? bubble : wait,
             "wait: " + span.label,
             fmt::format("{} \u00b7 {} {}", span.label,
                         pipeline ? "pipeline bubble: waited for rank " + std::to_string(span.peer)
                         : point_to_point ? "waited for rank " + std::to_string(span.peer)
                                          : std::string("waited for the group"),
                         seconds_text(span.start - span.issued))});
      }
      std::string detail = fmt::format(
          "{} \u00b7 {} {} \u00b7 {} in {}", span.label, workloads::to_string(span.dim),
          span.kind == workloads::OpKind::kSend   ? "send to rank " + std::to_string(span.peer)
          : span.kind == workloads::OpKind::kRecv ? "receive from rank " + std::to_string(span.peer)
                                                  : std::string("collective"),
          html::format_bytes_decimal(static_cast<double>(span.bytes)),
          html::format_seconds(duration));
      if (!span.algorithm.empty()) detail += " \u00b7 " + span.algorithm;
      detail += " \u00b7 at " + seconds_text(span.start);
      row.spans.push_back({span.start.seconds(), span.end.seconds(), static_cast<int>(span.dim),
                           span.label, std::move(detail)});
    }
    for (auto& row : rows) {
      if (!row.spans.empty()) chart.rows.push_back(std::move(row));
    }
  }
  return chart;
}

// Stacked bars of bytes against a capacity line, without series yet.
html::BarChart capacity_chart(std::string id, std::string title, std::string y_label,
                              const std::vector<std::string>& categories) {
  html::BarChart chart;
  chart.id = std::move(id);
  chart.title = std::move(title);
  chart.y_label = std::move(y_label);
  chart.categories = categories;
  chart.format = html::format_bytes_decimal;
  chart.limit_name = "capacity";
  return chart;
}

html::BarChart memory_chart(std::string id, std::string title,
                            const std::vector<std::string>& categories,
                            const std::vector<workloads::MemoryEstimate>& memory) {
  html::BarChart chart =
      capacity_chart(std::move(id), std::move(title), "bytes per rank", categories);
  html::Series params{"parameters", "#4e79a7", {}}, grads{"gradients", "#f28e2b", {}},
      optimizer{"optimizer states", "#59a14f", {}}, acts{"activations", "#b07aa1", {}};
  for (const auto& m : memory) {
    params.values.push_back(m.parameters.as_double());
    grads.values.push_back(m.gradients.as_double());
    optimizer.values.push_back(m.optimizer_states.as_double());
    acts.values.push_back(m.activations.as_double());
    chart.limits.push_back(m.capacity.as_double());
  }
  chart.series = {params, grads, optimizer, acts};
  return chart;
}

void scenario_section(html::Page& page, const nlohmann::ordered_json& resolved) {
  page.section("Scenario");
  page.paragraph("The scenario as simulated, with its includes expanded and overrides applied:");
  page.preformatted(resolved.dump(2));
}

std::string header_paragraph() {
  return fmt::format(
      "<p class=\"hint\">Written by stepsim {}. Every figure is simulated; "
      "docs/commands.md says how each is computed.</p>",
      html::escape(kVersion));
}

// The busiest links over the step (a heat map) and the traffic per link class, under `heading`;
// the charts' ids start with `id_prefix` (unique on a page with several steps).
void links_section(html::Page& page, const StepView& view, const std::string& heading = "Links",
                   const std::string& id_prefix = "") {
  page.section(heading);
  html::HeatMap heat;
  heat.id = id_prefix + "links";
  heat.title = fmt::format("Utilization of the {} busiest links over the step", view.links.size());
  heat.end_s = view.step_time.seconds();
  for (const auto& l : view.links) {
    heat.rows.push_back(fmt::format("{} ({}, {:.0f}%)", l.link, l.link_class, 100 * l.utilization));
    heat.values.push_back(l.bins);
  }
  // A step without traffic (one accelerator) has no link to show: no empty chart.
  if (view.links.empty()) {
    page.paragraph("No link carried traffic during the step.");
  } else {
    page.raw(html::heat_map(heat));
  }
  html::BarChart classes;
  classes.id = id_prefix + "link-classes";
  classes.title = "Utilization per link class";
  classes.y_label = "utilization";
  classes.stacked = false;
  classes.format = html::format_percent;
  html::Series average{"all links of the class", "#4e79a7", {}};
  html::Series busiest{"busiest link", "#e15759", {}};
  std::vector<std::vector<std::string>> class_rows;
  for (const auto& c : view.link_classes) {
    classes.categories.push_back(c.link_class);
    average.values.push_back(c.utilization);
    busiest.values.push_back(c.busiest_utilization);
    class_rows.push_back(
        {c.link_class, std::to_string(c.links), html::format_bytes_decimal(c.bytes_carried),
         html::format_bytes_decimal(c.capacity_Bps) + "/s", html::format_percent(c.utilization),
         html::format_percent(c.busiest_utilization)});
  }
  classes.series = {average, busiest};
  if (!view.links.empty()) page.raw(html::bar_chart(classes));
  page.raw(html::table(
      {"link class", "links", "bytes carried", "capacity", "utilization", "busiest link"},
      class_rows));
}

}  // namespace

void write_step_html(std::ostream& out, const StepReport& r, const StepView& view) {
  html::Page page(fmt::format("stepsim: {}", r.scenario));
  page.raw(header_paragraph());
  page.raw(html::table({}, summary_rows(r)));

  page.section("Timeline");
  page.paragraph(
      "One row per stream of each shown rank (by default the first rank of every pipeline stage, "
      "at most 16). Pink spans are pipeline bubbles: a send or receive waiting for its peer stage; "
      "grey spans are collectives waiting for the rest of their group.");
  page.raw(html::timeline(timeline_chart(view)));

  page.section("Where the time goes");
  std::vector<std::string> stages;
  std::vector<executor::RankBreakdown> parts;
  for (const StageView& s : view.stages) {
    stages.push_back(fmt::format("stage {} (rank {})", s.stage, s.parts.rank));
    parts.push_back(s.parts);
  }
  page.paragraph(
      "Per pipeline stage, on its first rank. Every instant goes to the highest-priority activity "
      "under way: compute, then communication by dimension (exposed: no compute ran), then "
      "pipeline bubble, then waiting for a collective's group; the rest is idle. The parts add up "
      "to the step time.");
  page.raw(html::bar_chart(breakdown_chart("stages", "Time per pipeline stage", stages, parts)));

  links_section(page, view);

  page.section("Traffic per parallel dimension");
  html::BarChart bytes;
  bytes.id = "dimensions";
  bytes.title = "Bytes per rank by parallel dimension";
  bytes.y_label = "bytes per rank";
  bytes.stacked = false;
  bytes.format = html::format_bytes_decimal;
  html::Series payload{"payload (buffers, as nccl-tests counts them)", "#4e79a7", {}};
  html::Series wire{"on the wire", "#f28e2b", {}};
  std::vector<std::vector<std::string>> dim_rows;
  for (const auto& d : r.dimensions) {
    bytes.categories.push_back(d.name);
    payload.values.push_back(d.payload_bytes_per_rank);
    wire.values.push_back(d.wire_bytes_per_rank);
    dim_rows.push_back({d.name, std::to_string(d.operations_per_rank),
                        html::format_bytes_decimal(d.payload_bytes_per_rank),
                        html::format_bytes_decimal(d.wire_bytes_per_rank), format_time(d.exposed)});
  }
  bytes.series = {payload, wire};
  if (r.dimensions.empty()) {
    page.paragraph("No communication: a single rank.");
  } else {
    page.raw(html::bar_chart(bytes));
  }
  page.raw(html::table({"dimension", "operations per rank", "payload per rank", "wire per rank",
                        "exposed on rank 0"},
                       dim_rows));

  page.section("Memory");
  std::vector<std::string> memory_stages;
  for (const auto& m : r.memory)
    memory_stages.push_back(fmt::format("stage {}", m.stage));
  page.raw(html::bar_chart(memory_chart(
      "memory", "Memory per rank of each stage against the capacity", memory_stages, r.memory)));
  for (const auto& m : r.memory) {
    if (!m.warning.empty()) page.paragraph(fmt::format("stage {}: {}", m.stage, m.warning));
  }

  scenario_section(page, r.resolved_scenario);
  out << page.str();
}

void write_compare_html(std::ostream& out, const std::vector<std::string>& labels,
                        const std::vector<StepReport>& reports) {
  // Charts name the variants by number ("#1") when a label is too long to sit under a bar; the
  // table gives the numbers. The topology column is left out when every label is the topology
  // (compare --topology).
  bool long_labels = false;
  bool labels_are_topologies = true;
  for (std::size_t i = 0; i < reports.size(); ++i) {
    long_labels = long_labels || labels[i].size() > 90 / std::max<std::size_t>(reports.size(), 1);
    labels_are_topologies = labels_are_topologies && labels[i] == reports[i].topology;
  }
  std::vector<std::string> categories;
  for (std::size_t i = 0; i < reports.size(); ++i)
    categories.push_back(long_labels ? fmt::format("#{}", i + 1) : labels[i]);
  html::Page page(fmt::format("stepsim: {} variants compared", reports.size()));
  page.raw(header_paragraph());
  std::vector<std::vector<std::string>> rows;
  for (std::size_t i = 0; i < reports.size(); ++i) {
    const auto& r = reports[i];
    std::vector<std::string> row{fmt::format("#{}", i + 1), labels[i]};
    if (!labels_are_topologies) row.push_back(r.topology);
    row.push_back(r.layout);
    row.push_back(std::to_string(r.world_size));
    row.push_back(format_time(r.step_time));
    row.push_back(fmt::format("{:.0f}", r.tokens_per_s));
    row.push_back(fmt::format("{:.1f}%", 100 * r.mfu));
    row.push_back(r.busiest_links.empty() ? std::string("-")
                                          : fmt::format("{} ({:.1f}%)", r.busiest_links[0].name,
                                                        100 * r.busiest_links[0].utilization));
    rows.push_back(std::move(row));
  }
  std::vector<std::string> header{"#", "variant"};
  if (!labels_are_topologies) header.emplace_back("topology");
  for (const char* h : {"layout", "ranks", "step time", "tokens/s", "MFU", "busiest link"})
    header.emplace_back(h);
  page.raw(html::table(header, rows));

  page.section("Step time");
  html::BarChart step;
  step.id = "step-time";
  step.title = "Step time per variant";
  step.y_label = "step time";
  step.categories = categories;
  step.format = html::format_seconds;
  html::Series time{"step time", std::string(kComputeColor), {}};
  for (const auto& r : reports)
    time.values.push_back(r.step_time.seconds());
  step.series = {time};
  page.raw(html::bar_chart(step));

  page.section("Where the time goes");
  std::vector<executor::RankBreakdown> parts;
  for (const auto& r : reports)
    parts.push_back(r.breakdowns.empty() ? executor::RankBreakdown{} : r.breakdowns[0].parts);
  page.raw(html::bar_chart(
      breakdown_chart("breakdown", "Where the time goes on rank 0 (stage 0)", categories, parts)));

  page.section("Traffic per parallel dimension");
  html::BarChart wire;
  wire.id = "dimensions";
  wire.title = "Bytes each rank put on the wire, by parallel dimension";
  wire.y_label = "bytes per rank";
  wire.categories = categories;
  wire.format = html::format_bytes_decimal;
  for (std::size_t d = 1; d < kDims; ++d) {
    html::Series s{dim_name(d), std::string(kDimColor[d]), {}};
    bool any = false;
    for (const auto& r : reports) {
      double v = 0;
      for (const auto& dim : r.dimensions)
        if (dim.name == dim_name(d)) v = dim.wire_bytes_per_rank;
      s.values.push_back(v);
      any = any || v > 0;
    }
    if (any) wire.series.push_back(std::move(s));
  }
  page.raw(html::bar_chart(wire));

  page.section("Busiest link");
  html::BarChart link;
  link.id = "busiest-link";
  link.title = "Utilization of the busiest link";
  link.y_label = "utilization";
  link.categories = categories;
  link.format = html::format_percent;
  html::Series util{"busiest link", "#e15759", {}};
  for (const auto& r : reports)
    util.values.push_back(r.busiest_links.empty() ? 0.0 : r.busiest_links[0].utilization);
  link.series = {util};
  page.raw(html::bar_chart(link));

  page.section("Memory");
  std::vector<workloads::MemoryEstimate> fullest;
  for (const auto& r : reports) {
    const auto it = std::max_element(
        r.memory.begin(), r.memory.end(),
        [](const auto& a, const auto& b) { return a.total.count() < b.total.count(); });
    fullest.push_back(it == r.memory.end() ? workloads::MemoryEstimate{} : *it);
  }
  page.raw(html::bar_chart(memory_chart(
      "memory", "Memory per rank of the fullest stage against the capacity", categories, fullest)));
  out << page.str();
}

namespace {

std::string pass_name(const PassReport& p) {
  return p.phase == workloads::ServingPhase::kDecode ? "decode" : "prefill";
}

// Weights, KV cache and activations per accelerator of each pass, against the capacity.
html::BarChart serving_memory_chart(std::string id, std::string title,
                                    const std::vector<std::string>& categories,
                                    const std::vector<const PassReport*>& passes) {
  html::BarChart chart =
      capacity_chart(std::move(id), std::move(title), "bytes per accelerator", categories);
  html::Series weights{"weights", "#4e79a7", {}}, kv{"KV cache", "#f28e2b", {}},
      acts{"activations", "#b07aa1", {}};
  for (const PassReport* p : passes) {
    const workloads::ServingMemory m = p != nullptr ? p->memory : workloads::ServingMemory{};
    weights.values.push_back(m.weights.as_double());
    kv.values.push_back(m.kv_cache.as_double());
    acts.values.push_back(m.activations.as_double());
    chart.limits.push_back(m.capacity.as_double());
  }
  chart.series = {weights, kv, acts};
  return chart;
}

std::vector<std::string> pass_row(const PassReport& p) {
  const bool decode = p.phase == workloads::ServingPhase::kDecode;
  return {pass_name(p),
          std::to_string(p.accelerators),
          p.placement,
          p.layout,
          std::to_string(p.batch),
          fmt::format("{} {}", p.tokens, decode ? "context" : "prompt"),
          format_time(p.time),
          fmt::format("{:.1f}", p.tokens_per_s_per_accelerator),
          std::to_string(p.memory.max_batch)};
}

void pass_section(html::Page& page, const PassReport& p, const StepView& view) {
  const std::string name = pass_name(p);
  const bool decode = p.phase == workloads::ServingPhase::kDecode;
  page.section(decode ? "Decode step" : "Prefill pass");
  page.paragraph(fmt::format(
      "{} at batch {} per replica ({} tokens of {}), on accelerators {}: {}.", name, p.batch,
      p.tokens, decode ? "context" : "prompt", p.placement, format_time(p.step)));
  html::Timeline timeline = timeline_chart(view);
  timeline.id = name + "-timeline";
  timeline.title = fmt::format("{} timeline of {} rank{}", decode ? "Decode step" : "Prefill pass",
                               view.ranks.size(), view.ranks.size() == 1 ? "" : "s");
  page.raw(html::timeline(timeline));
  std::vector<std::string> categories;
  std::vector<executor::RankBreakdown> parts;
  for (const StageView& s : view.stages) {
    categories.push_back(fmt::format("rank {}", s.parts.rank));
    parts.push_back(s.parts);
  }
  page.raw(html::bar_chart(breakdown_chart(
      name + "-breakdown", fmt::format("Where rank 0's {} time goes", name), categories, parts)));
  links_section(page, view, decode ? "Decode step: links" : "Prefill pass: links", name + "-");
}

}  // namespace

void write_serve_html(std::ostream& out, const ServeReport& r, const ServeViews& views) {
  html::Page page(fmt::format("stepsim serve: {}", r.scenario));
  page.raw(header_paragraph());
  std::vector<std::vector<std::string>> summary{
      {"scenario", r.scenario},
      {"topology", r.topology},
      {"model", fmt::format("{} on {}", r.model, r.device)},
      {"precision", fmt::format("{} weights, {} KV cache, {} expert combine", r.precision,
                                r.kv_cache, r.combine)},
      {"HBM efficiency", fmt::format("{:.3f}", r.hbm_efficiency)},
  };
  if (r.prefill) {
    std::string ttft = format_time(r.ttft);
    if (r.kv_transfer) {
      ttft += fmt::format(" (prefill pass {} + KV transfer {})", format_time(r.prefill->time),
                          format_time(r.kv_transfer->time));
    }
    summary.push_back({"time to first token (TTFT)", ttft});
    summary.push_back({"prompt tokens/s per accelerator",
                       fmt::format("{:.1f}", r.prefill->tokens_per_s_per_accelerator)});
  }
  if (r.decode) {
    summary.push_back({"time per output token (TPOT)", format_time(r.decode->time)});
    summary.push_back({"output tokens/s per accelerator",
                       fmt::format("{:.1f}", r.decode->tokens_per_s_per_accelerator)});
  }
  if (r.kv_transfer) {
    const KvTransferReport& kv = *r.kv_transfer;
    summary.push_back({"KV transfer to decode",
                       fmt::format("{} ({}, {} requests, {} each, {} plane)", format_time(kv.time),
                                   html::format_bytes_decimal(kv.bytes.as_double()), kv.requests,
                                   html::format_bytes_decimal(kv.bytes_per_request.as_double()),
                                   workloads::to_string(kv.plane))});
  }
  if (r.search && r.search->best) {
    const TpotSearch& s = *r.search;
    summary.push_back(
        {fmt::format("TPOT limit {}", format_time(s.limit)),
         fmt::format("largest batch {} (TPOT {}, {:.1f} output tokens/s per "
                     "accelerator){}",
                     s.best->batch, format_time(s.best->time), s.best->tokens_per_s_per_accelerator,
                     s.next
                         ? fmt::format("; batch {}: {}", s.next->batch, format_time(s.next->time))
                         : std::string("; the largest batch that fits"))});
  } else if (r.search) {
    summary.push_back({fmt::format("TPOT limit {}", format_time(r.search->limit)),
                       r.search->next ? "no batch meets it" : "the weights do not fit"});
  }
  if (r.load) {
    summary.push_back({"request mix", request_mix_text(r.load->mix)});
    for (const auto& [name, value] : request_load_lines(*r.load, r.colocated))
      summary.push_back({name, value});
  }
  page.raw(html::table({}, summary));

  std::vector<std::vector<std::string>> rows;
  for (const auto* p : {&r.prefill, &r.decode}) {
    if (*p) rows.push_back(pass_row(**p));
  }
  page.raw(html::table({"pool", "accelerators", "placement", "layout", "batch per replica",
                        "tokens", "time", "tokens/s per accelerator", "largest batch that fits"},
                       rows));
  page.paragraph(
      "The prefill pass's time is the time to first token when the pools share the "
      "accelerators; apart, the KV transfer follows it. The decode step's time is the time per "
      "output token. Each pass starts at 0 on its own timeline; by default the timeline shows "
      "rank 0 of each pool.");
  if (r.prefill && views.prefill) pass_section(page, *r.prefill, *views.prefill);
  if (r.decode && views.decode) pass_section(page, *r.decode, *views.decode);

  page.section("Memory");
  std::vector<std::string> pools;
  std::vector<const PassReport*> passes;
  for (const auto* p : {&r.prefill, &r.decode}) {
    if (!*p) continue;
    pools.push_back(pass_name(**p));
    passes.push_back(&**p);
  }
  page.raw(html::bar_chart(serving_memory_chart(
      "memory", "Memory per accelerator of each pool against the capacity", pools, passes)));

  scenario_section(page, r.resolved_scenario);
  out << page.str();
}

void write_serve_compare_html(std::ostream& out, const std::vector<std::string>& labels,
                              const std::vector<ServeReport>& reports) {
  bool long_labels = false;
  for (std::size_t i = 0; i < reports.size(); ++i)
    long_labels = long_labels || labels[i].size() > 90 / std::max<std::size_t>(reports.size(), 1);
  std::vector<std::string> categories;
  for (std::size_t i = 0; i < reports.size(); ++i)
    categories.push_back(long_labels ? fmt::format("#{}", i + 1) : labels[i]);
  html::Page page(fmt::format("stepsim: {} serving variants compared", reports.size()));
  page.raw(header_paragraph());
  auto time_or_dash = [](bool has, Time t) { return has ? format_time(t) : std::string("-"); };
  std::vector<std::vector<std::string>> rows;
  for (std::size_t i = 0; i < reports.size(); ++i) {
    const ServeReport& r = reports[i];
    rows.push_back(
        {fmt::format("#{}", i + 1), labels[i], r.topology,
         time_or_dash(r.prefill.has_value(), r.ttft), r.decode ? format_time(r.decode->time) : "-",
         r.prefill ? fmt::format("{:.1f}", r.prefill->tokens_per_s_per_accelerator) : "-",
         r.decode ? fmt::format("{:.1f}", r.decode->tokens_per_s_per_accelerator) : "-"});
  }
  page.raw(html::table({"#", "variant", "topology", "TTFT", "TPOT",
                        "prompt tokens/s per accelerator", "output tokens/s per accelerator"},
                       rows));
  auto bars = [&](std::string id, std::string title, std::string y_label, auto format, auto value) {
    html::BarChart chart;
    chart.id = std::move(id);
    chart.title = std::move(title);
    chart.y_label = std::move(y_label);
    chart.categories = categories;
    chart.stacked = false;
    chart.format = format;
    html::Series prefill{"prefill", "#4e79a7", {}}, decode{"decode", "#f28e2b", {}};
    for (const ServeReport& r : reports) {
      prefill.values.push_back(r.prefill ? value(r, *r.prefill) : 0.0);
      decode.values.push_back(r.decode ? value(r, *r.decode) : 0.0);
    }
    chart.series = {prefill, decode};
    return chart;
  };
  page.section("Latency");
  page.raw(html::bar_chart(
      bars("latency", "Time to first token (prefill) and time per output token (decode)", "time",
           html::format_seconds, [](const ServeReport& r, const PassReport& p) {
             return (p.phase == workloads::ServingPhase::kPrefill ? r.ttft : p.time).seconds();
           })));
  page.section("Throughput");
  page.raw(html::bar_chart(bars(
      "throughput", "Tokens/s per accelerator (prompt, output)", "tokens/s",
      [](double v) { return fmt::format("{:.1f}", v); },
      [](const ServeReport&, const PassReport& p) { return p.tokens_per_s_per_accelerator; })));
  page.section("Memory");
  std::vector<const PassReport*> decode;
  for (const ServeReport& r : reports)
    decode.push_back(r.decode ? &*r.decode : (r.prefill ? &*r.prefill : nullptr));
  page.raw(html::bar_chart(serving_memory_chart(
      "memory",
      "Memory per accelerator of the decode pool (or the prefill pool) against the "
      "capacity",
      categories, decode)));
  out << page.str();
}

void write_collective_html(std::ostream& out, const std::string& title,
                           const std::vector<std::vector<std::string>>& setup,
                           const std::vector<CollectivePoint>& points,
                           const std::vector<PublishedBusbw>& published) {
  html::Page page("stepsim collective: " + title);
  page.raw(header_paragraph());
  page.raw(html::table({}, setup));
  html::LineChart chart;
  chart.id = "busbw";
  chart.title = "Bus bandwidth against the size";
  chart.x_label = "size";
  chart.y_label = "GB/s";
  chart.log_x = true;
  chart.format_x = [](double bytes) {
    return format_bytes(Bytes(static_cast<std::int64_t>(std::llround(bytes))));
  };
  chart.format_y = [](double v) { return fmt::format("{:.4g} GB/s", v); };
  html::LineSeries busbw{"busbw (simulated)", "#4e79a7", {}, false};
  html::LineSeries algbw{"algbw (simulated)", "#76b7b2", {}, false};
  for (const auto& p : points) {
    busbw.points.push_back({p.size.as_double(), p.busbw_GBps, p.algorithm});
    algbw.points.push_back({p.size.as_double(), p.algbw_GBps, p.algorithm});
  }
  chart.series = {busbw, algbw};
  if (!published.empty()) {
    html::LineSeries marks{"busbw (published, validation/cases.yaml)", "#e15759", {}, true};
    for (const auto& p : published)
      marks.points.push_back({p.size.as_double(), p.busbw_GBps, p.note});
    chart.series.push_back(std::move(marks));
  }
  page.raw(html::line_chart(chart));
  if (published.empty()) {
    page.paragraph(
        "No published figure in validation/cases.yaml matches this topology, operation and "
        "ranks.");
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& p : points) {
    rows.push_back({std::to_string(p.size.count()), fmt::format("{:.2f}", p.time_us),
                    fmt::format("{:.2f}", p.algbw_GBps), fmt::format("{:.2f}", p.busbw_GBps),
                    p.algorithm});
  }
  page.raw(
      html::table({"size (B)", "time (us)", "algbw (GB/s)", "busbw (GB/s)", "algorithm"}, rows));
  out << page.str();
}

}  // namespace stepsim
