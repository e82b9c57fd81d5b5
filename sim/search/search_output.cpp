#include "sim/search/search_output.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <ostream>

#include "sim/output/csv_field.hpp"

namespace stepsim::search {
namespace {

// The dimensions with traffic in any of `rows`, in the report's order.
std::vector<std::string> dimensions(const std::vector<Evaluated>& rows, std::size_t count) {
  std::vector<std::string> out;
  for (const char* name : {"tp", "sp", "cp", "ep", "pp", "dp"}) {
    for (std::size_t i = 0; i < std::min(count, rows.size()); ++i) {
      const auto& dims = rows[i].report.dimensions;
      if (std::any_of(dims.begin(), dims.end(), [&](const auto& d) { return d.name == name; })) {
        out.emplace_back(name);
        break;
      }
    }
  }
  return out;
}

Time exposed(const StepReport& r, const std::string& dim) {
  for (const auto& d : r.dimensions) {
    if (d.name == dim) return d.exposed;
  }
  return Time::zero();
}

using output::csv_field;

std::string joined(const std::vector<std::string>& parts) {
  std::string s;
  for (std::size_t i = 0; i < parts.size(); ++i)
    s += (i ? " " : "") + parts[i];
  return s;
}

void emit(YAML::Emitter& out, const config::Value& v) {
  switch (v.kind) {
    case config::Value::Kind::kNull:
      out << YAML::Null;
      return;
    case config::Value::Kind::kScalar:
      if (v.quoted) out << YAML::DoubleQuoted;
      out << v.scalar;
      return;
    case config::Value::Kind::kSequence:
      out << YAML::BeginSeq;
      for (const auto& item : v.items)
        emit(out, item);
      out << YAML::EndSeq;
      return;
    case config::Value::Kind::kMap:
      out << YAML::BeginMap;
      for (const auto& e : v.entries) {
        out << YAML::Key << e.key << YAML::Value;
        emit(out, e.value);
      }
      out << YAML::EndMap;
      return;
  }
}

}  // namespace

std::string bottleneck(const StepReport& report) {
  const BreakdownReport* busiest = nullptr;
  Time most;
  for (const auto& b : report.breakdowns) {
    Time busy = b.parts.compute;
    for (const auto& e : b.parts.exposed)
      busy += e;
    if (busiest == nullptr || busy > most) {
      busiest = &b;
      most = busy;
    }
  }
  if (busiest == nullptr) return "";
  const auto open = busiest->label.find('(');
  const auto close = busiest->label.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open)
    return busiest->label;
  return busiest->label.substr(open + 1, close - open - 1);
}

void print_search(std::ostream& out, const SearchOutcome& outcome, std::size_t top) {
  out << fmt::format("search space: {}\n", outcome.space);
  out << fmt::format("{} layouts enumerated\n", outcome.enumerated);
  for (const auto& rule : outcome.pruned) {
    out << fmt::format("  {:>7} pruned by {}\n", rule.count, rule.rule);
  }
  out << fmt::format("{} simulated\n\n", outcome.simulated);

  const std::size_t shown = std::min(top, outcome.ranked.size());
  const auto dims = dimensions(outcome.ranked, shown);
  std::size_t width = 8;
  for (std::size_t i = 0; i < shown; ++i)
    width = std::max(width, outcome.ranked[i].candidate.label.size() + 2);
  out << fmt::format("{:>4}  {:<{}}{:>13}{:>13}{:>12}{:>7}", "#", "layout", width, "step time",
                     "bound", "tokens/s", "MFU");
  for (const auto& d : dims)
    out << fmt::format("{:>13}", "exposed " + d);
  out << fmt::format("{:>12}  {}\n", "memory", "bottleneck");
  for (std::size_t i = 0; i < shown; ++i) {
    const auto& e = outcome.ranked[i];
    const auto& r = e.report;
    out << fmt::format("{:>4}  {:<{}}{:>13}{:>13}{:>12.0f}{:>6.1f}%", i + 1, e.candidate.label,
                       width, format_time(r.step_time), format_time(e.candidate.bound),
                       r.tokens_per_s, 100 * r.mfu);
    for (const auto& d : dims)
      out << fmt::format("{:>13}", format_time(exposed(r, d)));
    out << fmt::format("{:>12}  {}\n", format_bytes(e.candidate.memory_peak), bottleneck(r));
  }
  if (shown < outcome.ranked.size())
    out << fmt::format("({} more simulated layouts; --top N shows more)\n",
                       outcome.ranked.size() - shown);
  out << "(exposed communication on the first stage's first rank; memory: the fullest stage, per "
         "rank; rows after the first are the fastest of those simulated)\n";
  out << fmt::format("the scenario's layout, {}: ", outcome.scenario_layout);
  if (outcome.scenario_rank > 0) {
    const auto& e = outcome.ranked[outcome.scenario_rank - 1];
    out << fmt::format("#{}, step time {}\n", outcome.scenario_rank,
                       format_time(e.report.step_time));
  } else if (outcome.scenario_bound > Time::zero()) {
    out << fmt::format("not simulated: its bound, {}, is no less than the best step time\n",
                       format_time(outcome.scenario_bound));
  } else {
    out << "not a candidate (outside the space, or removed by a rule before the bound)\n";
  }
}

void write_csv(std::ostream& out, const SearchOutcome& outcome) {
  const auto dims = dimensions(outcome.ranked, outcome.ranked.size());
  out << "rank,layout,step_time_s,bound_s,tokens_per_s,mfu";
  for (const auto& d : dims)
    out << ",exposed_" << d << "_s";
  out << ",memory_peak_bytes,bottleneck,overrides\n";
  for (std::size_t i = 0; i < outcome.ranked.size(); ++i) {
    const auto& e = outcome.ranked[i];
    const auto& r = e.report;
    out << i + 1 << ',' << csv_field(e.candidate.label) << ','
        << fmt::format("{:.9g},{:.9g},{:.6g},{:.6g}", r.step_time.seconds(),
                       e.candidate.bound.seconds(), r.tokens_per_s, r.mfu);
    for (const auto& d : dims)
      out << ',' << fmt::format("{:.9g}", exposed(r, d).seconds());
    out << ',' << e.candidate.memory_peak.count() << ',' << csv_field(bottleneck(r)) << ','
        << csv_field(joined(e.candidate.overrides)) << '\n';
  }
}

nlohmann::ordered_json to_json(const SearchOutcome& outcome) {
  nlohmann::ordered_json j;
  j["space"] = outcome.space;
  j["enumerated"] = outcome.enumerated;
  auto pruned = nlohmann::ordered_json::object();
  for (const auto& rule : outcome.pruned)
    pruned[rule.rule] = rule.count;
  j["pruned"] = pruned;
  j["simulated"] = outcome.simulated;
  auto rows = nlohmann::ordered_json::array();
  for (const auto& e : outcome.ranked) {
    nlohmann::ordered_json row;
    row["layout"] = e.candidate.label;
    row["overrides"] = e.candidate.overrides;
    row["step_time_s"] = e.report.step_time.seconds();
    row["bound_s"] = e.candidate.bound.seconds();
    row["tokens_per_s"] = e.report.tokens_per_s;
    row["mfu"] = e.report.mfu;
    auto ex = nlohmann::ordered_json::object();
    for (const auto& d : e.report.dimensions)
      ex[d.name] = d.exposed.seconds();
    row["exposed_s"] = ex;
    row["memory_peak_bytes"] = e.candidate.memory_peak.count();
    row["bottleneck"] = bottleneck(e.report);
    rows.push_back(row);
  }
  j["results"] = rows;
  nlohmann::ordered_json own;
  own["layout"] = outcome.scenario_layout;
  own["bound_s"] = outcome.scenario_bound > Time::zero()
                       ? nlohmann::ordered_json(outcome.scenario_bound.seconds())
                       : nlohmann::ordered_json();
  own["rank"] = outcome.scenario_rank > 0 ? nlohmann::ordered_json(outcome.scenario_rank)
                                          : nlohmann::ordered_json();
  j["scenario_layout"] = own;
  return j;
}

void write_scenario_yaml(std::ostream& out, const Scenario& base, const Evaluated& best) {
  Scenario s = candidate_scenario(base, best.candidate);
  s.document.set("name", nlohmann::json(base.name + "-best").dump());
  YAML::Emitter yaml;
  emit(yaml, s.document.root().value());
  out << fmt::format(
      "# The fastest layout stepsim search found for {}: {}, step time {} (lower bound {}).\n"
      "# Found with the overrides: {}\n",
      base.name, best.candidate.label, format_time(best.report.step_time),
      format_time(best.candidate.bound), joined(best.candidate.overrides));
  out << yaml.c_str() << '\n';
}

}  // namespace stepsim::search
