#include "sim/app/comparison_writer.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <ostream>

#include "sim/output/csv_field.hpp"
#include "sim/run/html_report.hpp"

namespace stepsim::app {
namespace {

using output::csv_field;

std::size_t label_width(const Comparison& c) {
  std::size_t width = 8;
  for (const auto& label : c.labels)
    width = std::max(width, label.size() + 2);
  return width;
}

// The dimensions with exposed communication in any report, in order of first appearance.
std::vector<std::string> dimensions(const Comparison& c) {
  std::vector<std::string> dims;
  for (const auto& r : c.steps) {
    for (const auto& d : r.dimensions) {
      if (std::find(dims.begin(), dims.end(), d.name) == dims.end()) dims.push_back(d.name);
    }
  }
  return dims;
}

Time exposed(const StepReport& r, const std::string& dim) {
  for (const auto& d : r.dimensions) {
    if (d.name == dim) return d.exposed;
  }
  return Time::zero();
}

Time exposed_total(const StepReport& r) {
  Time t;
  if (r.breakdowns.empty()) return t;
  for (const auto& e : r.breakdowns.front().parts.exposed)
    t += e;
  return t;
}

Time bubble(const StepReport& r) {
  return r.breakdowns.empty() ? Time::zero() : r.breakdowns[0].parts.bubble;
}

void write_step_table(std::ostream& out, const Comparison& c) {
  const std::vector<std::string> dims = dimensions(c);
  const std::size_t width = label_width(c);
  out << fmt::format("{:<{}}{:>14}{:>14}{:>8}", "variant", width, "step time", "tokens/s", "MFU");
  for (const auto& d : dims)
    out << fmt::format("{:>14}", "exposed " + d);
  out << fmt::format("{:>14}  {}\n", "bubble", "busiest link");
  for (std::size_t i = 0; i < c.steps.size(); ++i) {
    const auto& r = c.steps[i];
    out << fmt::format("{:<{}}{:>14}{:>14.0f}{:>7.1f}%", c.labels[i], width,
                       format_time(r.step_time), r.tokens_per_s, 100 * r.mfu);
    for (const auto& d : dims)
      out << fmt::format("{:>14}", format_time(exposed(r, d)));
    out << fmt::format("{:>14}  ", format_time(bubble(r)));
    if (!r.busiest_links.empty())
      out << fmt::format("{} ({:.1f}%)", r.busiest_links[0].name,
                         100 * r.busiest_links[0].utilization);
    out << '\n';
  }
  out << "(exposed communication and bubble on rank 0; total exposed: ";
  for (std::size_t i = 0; i < c.steps.size(); ++i)
    out << (i ? ", " : "") << format_time(exposed_total(c.steps[i]));
  out << ")\n";
}

std::string time_or_dash(bool has, Time t) {
  return has ? format_time(t) : std::string("-");
}

void write_serve_table(std::ostream& out, const Comparison& c) {
  const std::size_t width = label_width(c);
  auto rate_or_dash = [](const std::optional<PassReport>& p) {
    return p ? fmt::format("{:.1f}", p->tokens_per_s_per_accelerator) : std::string("-");
  };
  auto memory_or_dash = [](const std::optional<PassReport>& p) {
    return p ? fmt::format("{:.2f} GB", p->memory.total().as_double() * 1e-9) : std::string("-");
  };
  out << fmt::format("{:<{}}{:>14}{:>14}{:>14}{:>16}{:>16}{:>14}{:>14}\n", "variant", width, "TTFT",
                     "KV transfer", "TPOT", "prompt tok/s", "output tok/s", "prefill mem",
                     "decode mem");
  for (std::size_t i = 0; i < c.serves.size(); ++i) {
    const ServeReport& r = c.serves[i];
    out << fmt::format(
        "{:<{}}{:>14}{:>14}{:>14}{:>16}{:>16}{:>14}{:>14}\n", c.labels[i], width,
        time_or_dash(r.prefill.has_value(), r.ttft),
        time_or_dash(r.kv_transfer.has_value(), r.kv_transfer ? r.kv_transfer->time : Time{}),
        time_or_dash(r.decode.has_value(), r.decode ? r.decode->time : Time{}),
        rate_or_dash(r.prefill), rate_or_dash(r.decode), memory_or_dash(r.prefill),
        memory_or_dash(r.decode));
  }
  out << "(tokens/s per accelerator; memory per accelerator: weights, KV cache and "
         "activations)\n";
}

void write_step_csv(std::ostream& out, const Comparison& c) {
  const std::vector<std::string> dims = dimensions(c);
  out << "variant,step_time_s,tokens_per_s,mfu,bubble_s";
  for (const auto& d : dims)
    out << ",exposed_" << d << "_s";
  out << ",busiest_link,busiest_link_utilization\n";
  for (std::size_t i = 0; i < c.steps.size(); ++i) {
    const auto& r = c.steps[i];
    out << csv_field(c.labels[i]) << ',' << fmt::format("{:.9g}", r.step_time.seconds()) << ','
        << fmt::format("{:.6g}", r.tokens_per_s) << ',' << fmt::format("{:.6g}", r.mfu) << ','
        << fmt::format("{:.9g}", bubble(r).seconds());
    for (const auto& d : dims)
      out << ',' << fmt::format("{:.9g}", exposed(r, d).seconds());
    out << ',' << csv_field(r.busiest_links.empty() ? "" : r.busiest_links[0].name) << ','
        << fmt::format("{:.6g}", r.busiest_links.empty() ? 0.0 : r.busiest_links[0].utilization)
        << '\n';
  }
}

void write_serve_csv(std::ostream& out, const Comparison& c) {
  out << "variant,ttft_s,kv_transfer_s,tpot_s,prompt_tokens_per_s_per_accelerator,"
         "output_tokens_per_s_per_accelerator,prefill_memory_bytes,decode_memory_bytes\n";
  auto seconds = [](bool has, Time t) {
    return has ? fmt::format("{:.9g}", t.seconds()) : std::string();
  };
  auto rate = [](const std::optional<PassReport>& p) {
    return p ? fmt::format("{:.6g}", p->tokens_per_s_per_accelerator) : std::string();
  };
  auto memory = [](const std::optional<PassReport>& p) {
    return p ? std::to_string(p->memory.total().count()) : std::string();
  };
  for (std::size_t i = 0; i < c.serves.size(); ++i) {
    const ServeReport& r = c.serves[i];
    out << csv_field(c.labels[i]) << ',' << seconds(r.prefill.has_value(), r.ttft) << ','
        << seconds(r.kv_transfer.has_value(), r.kv_transfer ? r.kv_transfer->time : Time{}) << ','
        << seconds(r.decode.has_value(), r.decode ? r.decode->time : Time{}) << ','
        << rate(r.prefill) << ',' << rate(r.decode) << ',' << memory(r.prefill) << ','
        << memory(r.decode) << '\n';
  }
}

}  // namespace

void write_comparison_table(std::ostream& out, const Comparison& comparison) {
  if (comparison.serving)
    write_serve_table(out, comparison);
  else
    write_step_table(out, comparison);
}

nlohmann::ordered_json comparison_json(const Comparison& comparison) {
  auto rows = nlohmann::ordered_json::array();
  const std::size_t n = comparison.serving ? comparison.serves.size() : comparison.steps.size();
  for (std::size_t i = 0; i < n; ++i) {
    nlohmann::ordered_json entry;
    entry["variant"] = comparison.labels[i];
    if (comparison.serving) {
      entry["report"] = to_json(comparison.serves[i]);
    } else {
      auto report = to_json(comparison.steps[i]);
      report.erase("resolved_scenario");
      entry["report"] = report;
    }
    rows.push_back(entry);
  }
  return rows;
}

void write_comparison_csv(std::ostream& out, const Comparison& comparison) {
  if (comparison.serving)
    write_serve_csv(out, comparison);
  else
    write_step_csv(out, comparison);
}

void write_comparison_page(std::ostream& out, const Comparison& comparison) {
  if (comparison.serving)
    write_serve_compare_html(out, comparison.labels, comparison.serves);
  else
    write_compare_html(out, comparison.labels, comparison.steps);
}

}  // namespace stepsim::app
