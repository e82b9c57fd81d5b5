#include "sim/search/search_space.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "sim/common/input_error.hpp"
#include "sim/scenario/scenario.hpp"

namespace stepsim::search {
namespace {

constexpr std::int64_t kMaxDim = 1 << 20;

std::vector<std::string> powers_of_two_up_to(std::int64_t limit) {
  std::vector<std::string> out;
  for (std::int64_t v = 1; v <= limit; v *= 2)
    out.push_back(std::to_string(v));
  return out;
}

void add_value(std::vector<std::string>& list, const std::string& value) {
  if (std::find(list.begin(), list.end(), value) == list.end()) list.push_back(value);
}

// Accelerators in the scale-up domain (or node) of the first accelerator: where Megatron-LM users
// keep tensor parallelism.
std::int64_t scale_up_size(const topology::Topology& topo) {
  if (topo.accelerators().empty()) return 1;
  const auto first = topo.accelerators().front();
  for (const auto kind : {topology::GroupKind::kScaleUp, topology::GroupKind::kNode}) {
    if (const auto g = topo.group_of(first, kind)) {
      std::int64_t count = 0;
      for (const auto member : topo.group(*g).members)
        count += topo.accelerator_index(member) ? 1 : 0;
      if (count > 0) return count;
    }
  }
  return 1;
}

// The value as the space stores it, after checking it is one `key` can take.
std::string checked_value(const std::string& key, const config::Node& n) {
  if (!n.is_scalar()) n.fail("a value or a list of values");
  if (key == "tp" || key == "cp" || key == "pp" || key == "dp" || key == "ep" ||
      key == "micro_batch") {
    return std::to_string(n.as_int(1, kMaxDim));
  }
  if (key == "vpp") return std::to_string(n.as_int(1, 256));
  if (key == "zero") {
    if (n.as_string() == "fsdp") return "3";
    return std::to_string(n.as_int(0, 3));
  }
  if (key == "sp" || key == "tp_comm_overlap") return n.as_bool() ? "true" : "false";
  if (key == "cp_mode") return n.as_choice({"ring", "ulysses"});
  if (key == "schedule") return n.as_choice({"gpipe", "1f1b", "interleaved"});
  if (key == "recompute") return n.as_choice({"none", "selective", "full"});
  if (key == "grad_bucket") {
    n.as_bytes(Bytes(1));
    return n.as_string();
  }
  if (key == "order") {
    const std::string text = n.as_string();
    std::set<std::string> seen;
    std::size_t start = 0;
    while (start <= text.size()) {
      const std::size_t dash = std::min(text.find('-', start), text.size());
      const std::string part = text.substr(start, dash - start);
      if (part != "tp" && part != "cp" && part != "ep" && part != "dp" && part != "pp")
        n.fail("the five dimensions tp, cp, ep, dp, pp joined by '-', each once");
      seen.insert(part);
      start = dash + 1;
    }
    if (seen.size() != 5) n.fail("the five dimensions tp, cp, ep, dp, pp joined by '-', each once");
    return text;
  }
  n.fail_with(fmt::format("unknown search key '{}'", key));
}

}  // namespace

const std::vector<std::string>& space_keys() {
  static const std::vector<std::string> keys = {
      "tp", "sp",   "tp_comm_overlap", "cp",        "cp_mode",     "pp",   "vpp", "schedule", "dp",
      "ep", "zero", "micro_batch",     "recompute", "grad_bucket", "order"};
  return keys;
}

const std::vector<std::string>* SearchSpace::find(const std::string& key) const {
  const auto it = values.find(key);
  return it == values.end() ? nullptr : &it->second;
}

SearchSpace default_space(const Scenario& base) {
  const auto& spec = base.workload;
  const auto& p = spec.parallel;
  const auto world = static_cast<std::int64_t>(base.topology.accelerators().size());
  SearchSpace space;
  auto& tp = space.values["tp"];
  tp = powers_of_two_up_to(std::min(scale_up_size(base.topology), world));
  add_value(tp, std::to_string(p.tp));
  space.values["sp"] = {"true"};
  // Context parallelism for long sequences: while each rank keeps at least 4,096 tokens.
  auto& cp = space.values["cp"];
  cp = powers_of_two_up_to(
      std::max<std::int64_t>(1, std::min<std::int64_t>(8, spec.training.seq_len / 4096)));
  add_value(cp, std::to_string(p.cp));
  auto& pp = space.values["pp"];
  pp = powers_of_two_up_to(std::min<std::int64_t>(spec.model.layers, world));
  add_value(pp, std::to_string(p.pp));
  auto& vpp = space.values["vpp"];
  vpp = {"1", "2", "4"};
  add_value(vpp, std::to_string(p.vpp));
  auto& ep = space.values["ep"];
  if (spec.model.moe_enabled) {
    ep = powers_of_two_up_to(std::min<std::int64_t>(spec.model.moe.experts, world));
    std::erase_if(ep, [&](const std::string& v) { return spec.model.moe.experts % std::stoll(v); });
  } else {
    ep = {"1"};
  }
  add_value(ep, std::to_string(p.ep));
  auto& zero = space.values["zero"];
  zero = {"0", "1"};
  add_value(zero, std::to_string(p.zero));
  auto& mb = space.values["micro_batch"];
  mb = {"1", "2", "4"};
  add_value(mb, std::to_string(spec.training.micro_batch));
  space.values["recompute"] = {"none", "selective", "full"};
  return space;
}

void apply_space(SearchSpace& space, const config::Node& root) {
  if (root.is_null()) root.fail_with("the search space is empty");
  if (!root.is_map()) root.fail("a map of layout keys to values or lists of values");
  root.allow_keys(space_keys());
  for (const auto& [key, node] : root.entries()) {
    std::vector<std::string> list;
    if (node.is_sequence()) {
      const auto items = node.items();
      if (items.empty())
        node.fail_with(fmt::format("an empty list: give {} at least one value", key));
      for (const auto& item : items) {
        std::string v = checked_value(key, item);
        if (std::find(list.begin(), list.end(), v) != list.end())
          item.fail_with(fmt::format("the value '{}' appears twice", item.as_string()));
        list.push_back(std::move(v));
      }
    } else {
      list.push_back(checked_value(key, node));
    }
    space.values[key] = std::move(list);
  }
}

void apply_space_assignment(SearchSpace& space, const std::string& assignment) {
  const std::size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw InputError(fmt::format(
        "--space '{}': expected KEY=V1,V2,... (keys: tp, sp, cp, pp, vpp, ...) or a YAML file",
        assignment));
  }
  const std::string key = assignment.substr(0, eq);
  const std::string list = assignment.substr(eq + 1);
  if (list.find_first_of("[]{}#:") != std::string::npos) {
    throw InputError(fmt::format("--space '{}': {}: expected values separated by commas, got '{}'",
                                 assignment, key, list));
  }
  const config::Document doc = config::Document::parse(
      fmt::format("{}: [{}]\n", key, list), fmt::format("command line (--space {})", assignment));
  apply_space(space, doc.root());
}

void apply_space_argument(SearchSpace& space, const std::string& argument) {
  if (argument.find('=') != std::string::npos) {
    apply_space_assignment(space, argument);
    return;
  }
  const config::Document doc = config::Document::load_file(argument);
  apply_space(space, doc.root());
}

std::string describe(const SearchSpace& space) {
  std::string out;
  for (const auto& key : space_keys()) {
    const auto* list = space.find(key);
    if (list == nullptr) continue;
    if (!out.empty()) out += ' ';
    out += key + '=';
    for (std::size_t i = 0; i < list->size(); ++i)
      out += (i ? "," : "") + (*list)[i];
  }
  return out;
}

}  // namespace stepsim::search
