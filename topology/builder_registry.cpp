#include "topology/builder_registry.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <stdexcept>

#include "sim/common/input_error.hpp"

namespace stepsim::topology {

ParamReader::ParamReader(std::string builder, const std::vector<ParamSpec>& schema,
                         std::optional<config::Node> params)
    : builder_(std::move(builder)), params_(std::move(params)) {
  std::vector<std::string> names;
  std::string text;
  for (const ParamSpec& p : schema) {
    names.push_back(p.name);
    text += fmt::format("{}: {}\n", p.name, p.default_value);
  }
  if (params_ && !params_->is_null()) {
    if (!params_->is_map()) params_->fail(fmt::format("a map of parameters of '{}'", builder_));
    params_->allow_keys(names);
  }
  defaults_ = std::make_unique<config::Document>(
      config::Document::parse(text, fmt::format("defaults of '{}'", builder_)));
}

ParamReader::~ParamReader() = default;

config::Node ParamReader::at(std::string_view name) const {
  if (params_ && params_->is_map()) {
    if (auto n = params_->find(name)) return *n;
  }
  const config::Node root = defaults_->root();
  if (!root.is_map() || !root.has(name)) {
    throw std::logic_error(
        fmt::format("builder '{}' reads parameter '{}' missing from its schema", builder_, name));
  }
  return root.at(name);
}

std::int64_t ParamReader::integer(std::string_view name, std::int64_t min, std::int64_t max) const {
  return at(name).as_int(min, max);
}
double ParamReader::number(std::string_view name, double min, double max) const {
  return at(name).as_double(min, max);
}
bool ParamReader::boolean(std::string_view name) const {
  return at(name).as_bool();
}
BytesPerSecond ParamReader::bandwidth(std::string_view name) const {
  return at(name).as_bandwidth();
}
Time ParamReader::time(std::string_view name) const {
  return at(name).as_time();
}
std::string ParamReader::choice(std::string_view name,
                                std::initializer_list<std::string_view> choices) const {
  return at(name).as_choice(choices);
}

void ParamReader::fail(std::string_view message) const {
  // Inline parameters have a key path to point at; a command-line spec's parameters do not.
  if (params_ && !params_->path().empty()) {
    params_->fail_with(fmt::format("{}: {}", builder_, message));
  }
  throw InputError(fmt::format("topology '{}': {}", builder_, message));
}

BuilderRegistry BuilderRegistry::with_builtins() {
  BuilderRegistry r;
  register_nvswitch_presets(r);
  register_fat_tree_builders(r);
  register_cloudmatrix_presets(r);
  register_ub_mesh_presets(r);
  register_torus_builders(r);
  return r;
}

void BuilderRegistry::add(BuilderEntry entry) {
  if (find(entry.name) != nullptr) {
    throw std::logic_error(fmt::format("topology builder '{}' registered twice", entry.name));
  }
  entries_.push_back(std::move(entry));
}

const BuilderEntry* BuilderRegistry::find(std::string_view name) const {
  for (const BuilderEntry& e : entries_) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

std::vector<const BuilderEntry*> BuilderRegistry::entries() const {
  std::vector<const BuilderEntry*> out;
  for (const BuilderEntry& e : entries_)
    out.push_back(&e);
  std::sort(out.begin(), out.end(), [](const BuilderEntry* a, const BuilderEntry* b) {
    return std::tie(a->category, a->name) < std::tie(b->category, b->name);
  });
  return out;
}

std::vector<std::string> BuilderRegistry::names() const {
  std::vector<std::string> out;
  for (const BuilderEntry* e : entries())
    out.push_back(e->name);
  return out;
}

Topology BuilderRegistry::build(const std::string& name, std::optional<config::Node> params,
                                const config::Node& where) const {
  const BuilderEntry* entry = find(name);
  if (entry == nullptr) {
    const std::string suggestion = config::closest_match(name, names());
    where.fail_with(
        fmt::format("unknown topology preset or builder '{}'{}; known: {}", name,
                    suggestion.empty() ? "" : fmt::format(" (did you mean '{}'?)", suggestion),
                    fmt::join(names(), ", ")));
  }
  const ParamReader reader(entry->name, entry->params, std::move(params));
  return entry->build(reader);
}

}  // namespace stepsim::topology
