#include "sim/validation/validation_case.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

#include "sim/common/config.hpp"
#include "sim/common/input_error.hpp"

namespace stepsim::validation {
namespace {

std::optional<double> parse_number(std::string_view text) {
  double v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(v)) return {};
  return v;
}

// Follows "a.0.b" through maps (keys) and lists (indices) of `root`.
config::Node follow(config::Node node, std::string_view path, const config::Node& asked) {
  std::size_t begin = 0;
  while (begin <= path.size()) {
    const std::size_t end = std::min(path.find('.', begin), path.size());
    const std::string_view part = path.substr(begin, end - begin);
    if (node.is_map()) {
      auto child = node.find(part);
      if (!child)
        asked.fail_with(fmt::format("the data file has no '{}' at {}", part, node.path()));
      node = *child;
    } else if (node.is_sequence()) {
      const auto items = node.items();
      std::size_t index = 0;
      const auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), index);
      if (ec != std::errc() || ptr != part.data() + part.size() || index >= items.size())
        asked.fail_with(fmt::format("'{}' is not an index of the {} entries at {}", part,
                                    items.size(), node.path()));
      node = items[index];
    } else {
      asked.fail_with(
          fmt::format("{} is a single value; '{}' cannot follow it", node.path(), part));
    }
    begin = end + 1;
  }
  return node;
}

PublishedFigure read_published(const config::Node& n,
                               const std::map<std::string, std::filesystem::path>& data) {
  const std::string text = n.as_string();
  const auto colon = text.find(':');
  if (colon == std::string::npos)
    n.fail("DATA:KEY.PATH naming a figure in a data file, such as 'nccl:single_node.0.busbw'");
  const std::string name = text.substr(0, colon);
  const auto file = data.find(name);
  if (file == data.end()) n.fail_with(fmt::format("no data file named '{}' under 'data:'", name));
  const auto doc = config::Document::load_file(file->second, n);
  const config::Node figure = follow(doc.root(), std::string_view(text).substr(colon + 1), n);
  if (!figure.is_scalar())
    n.fail_with(fmt::format("{} in {} is not a number", figure.path(), file->second.string()));
  PublishedFigure p;
  p.printed = figure.as_string();
  p.reference = fmt::format("{} {}", file->second.filename().string(), text.substr(colon + 1));
  if (auto v = parse_number(p.printed)) {
    p.value = *v;
  } else if (const auto dash = p.printed.find('-'); dash != std::string::npos && dash > 0) {
    // A printed range ("46-48"): compare against its midpoint.
    const auto lo = parse_number(std::string_view(p.printed).substr(0, dash));
    const auto hi = parse_number(std::string_view(p.printed).substr(dash + 1));
    if (!lo || !hi || *lo > *hi)
      n.fail_with(fmt::format("{} is '{}', neither a number nor a range LOW-HIGH", figure.path(),
                              p.printed));
    p.value = (*lo + *hi) / 2;
  } else {
    n.fail_with(fmt::format("{} is '{}', not a number", figure.path(), p.printed));
  }
  if (p.value <= 0) n.fail_with(fmt::format("{} is '{}', not positive", figure.path(), p.printed));
  return p;
}

Case read_case(const config::Node& n, const std::map<std::string, std::filesystem::path>& data) {
  n.allow_keys({"figure", "published", "measure", "topology", "ranks", "op", "algo", "size",
                "nics_per_node", "scenario", "overrides", "assumptions", "quick", "known_gap"});
  Case c;
  c.where = fmt::format("{}: {}", n.location(), n.path());
  c.figure = n.at("figure").as_string();
  c.published = read_published(n.at("published"), data);
  const std::string measure =
      n.at("measure").as_choice({"busbw", "busbw_per_nic", "time_us", "tflops_per_gpu", "ttft_ms",
                                 "tpot_ms", "prompt_tokens_per_s", "output_tokens_per_s"});
  for (const Measure m :
       {Measure::kBusbw, Measure::kBusbwPerNic, Measure::kTimeUs, Measure::kTflopsPerGpu,
        Measure::kTtftMs, Measure::kTpotMs, Measure::kPromptTokensPerS, Measure::kOutputTokensPerS})
    if (to_string(m) == measure) c.measure = m;
  if (auto a = n.find("assumptions")) c.assumptions = a->as_string();
  if (auto q = n.find("quick")) c.quick = q->as_bool();
  if (auto g = n.find("known_gap")) c.known_gap = g->as_string();
  if (c.measure == Measure::kTflopsPerGpu || is_serving(c.measure)) {
    for (const char* key : {"topology", "ranks", "op", "algo", "size", "nics_per_node"})
      if (n.has(key))
        n.at(key).fail_with(
            "a training-step or serving case takes its setup from its scenario file");
    c.scenario = n.at("scenario").as_path();
    if (auto o = n.find("overrides")) {
      for (const config::Node& item : o->items())
        c.overrides.push_back(item.as_string());
    }
    return c;
  }
  if (n.has("scenario")) n.at("scenario").fail_with("a collective case has no scenario file");
  if (n.has("overrides")) n.at("overrides").fail_with("a collective case has no scenario file");
  CollectiveSetup s;
  s.topology = n.at("topology").as_string();
  s.ranks = n.at("ranks").as_string();
  s.op = n.at("op").as_string();
  s.algorithm = n.at("algo").as_string();
  s.size = n.at("size").as_bytes(Bytes(1));
  if (auto k = n.find("nics_per_node")) s.nics_per_node = static_cast<int>(k->as_int(1, 64));
  if (c.measure == Measure::kBusbwPerNic && !n.has("nics_per_node"))
    n.fail_with("measure busbw_per_nic needs nics_per_node");
  c.collective = std::move(s);
  return c;
}

}  // namespace

std::string_view to_string(Measure m) {
  switch (m) {
    case Measure::kBusbw:
      return "busbw";
    case Measure::kBusbwPerNic:
      return "busbw_per_nic";
    case Measure::kTimeUs:
      return "time_us";
    case Measure::kTflopsPerGpu:
      return "tflops_per_gpu";
    case Measure::kTtftMs:
      return "ttft_ms";
    case Measure::kTpotMs:
      return "tpot_ms";
    case Measure::kPromptTokensPerS:
      return "prompt_tokens_per_s";
    case Measure::kOutputTokensPerS:
      return "output_tokens_per_s";
  }
  return "?";
}

CaseFile load_cases(const std::filesystem::path& file) {
  const auto doc = config::Document::load_file(file);
  const config::Node root = doc.root();
  root.allow_keys({"data", "tables"});
  CaseFile cases;
  cases.file = file;
  for (const auto& [name, path] : root.at("data").entries())
    cases.data[name] = path.as_path();
  for (const config::Node& t : root.at("tables").items()) {
    t.allow_keys({"name", "title", "metric", "target", "notes", "cases"});
    Table table;
    table.name = t.at("name").as_string();
    table.title = t.at("title").as_string();
    table.metric = t.at("metric").as_string();
    if (auto target = t.find("target"); target && !target->is_null())
      table.target = target->as_double(1e-6, 1.0);
    if (auto notes = t.find("notes")) table.notes = notes->as_string();
    for (const config::Node& c : t.at("cases").items())
      table.cases.push_back(read_case(c, cases.data));
    cases.tables.push_back(std::move(table));
  }
  return cases;
}

}  // namespace stepsim::validation
