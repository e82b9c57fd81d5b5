// The open registry of topology builders and presets: name -> (description, parameter schema,
// build function). `builder: fat-tree` and `preset: dgx-h100` in YAML, and the spec string
// `dgx-h100-superpod:nodes=4` on the command line, all look names up here. New fabrics register
// themselves with add(); nothing else needs to change.
//
// Parameters are read through ParamReader, which takes each value from the user's map when given
// and otherwise from the schema's default text, with the same typed, located parsing (so every
// default is written once, in the schema, and a bad value names where it came from).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sim/common/config.hpp"
#include "topology/topology.hpp"

namespace stepsim::topology {

struct ParamSpec {
  std::string name;
  std::string default_value;  // YAML text, e.g. "400Gbps", "true", "[1, 1]"
  std::string help;
};

// Typed access to a builder's parameters: the user's value, or the schema default.
class ParamReader {
 public:
  // `params` is the user's map (may be null: all defaults). Unknown keys are rejected with a
  // "did you mean" suggestion.
  ParamReader(std::string builder, const std::vector<ParamSpec>& schema,
              std::optional<config::Node> params);
  ~ParamReader();
  // The node holding parameter `name` (user value or default). `name` must be in the schema.
  config::Node at(std::string_view name) const;
  std::int64_t integer(std::string_view name, std::int64_t min, std::int64_t max) const;
  double number(std::string_view name, double min, double max) const;
  bool boolean(std::string_view name) const;
  BytesPerSecond bandwidth(std::string_view name) const;
  Time time(std::string_view name) const;
  std::string choice(std::string_view name, std::initializer_list<std::string_view> choices) const;
  // Where errors about the whole parameter set are reported (the user's map, or the builder).
  [[noreturn]] void fail(std::string_view message) const;
  const std::string& builder() const { return builder_; }

 private:
  std::string builder_;
  std::optional<config::Node> params_;
  std::unique_ptr<config::Document> defaults_;
};

struct BuilderEntry {
  std::string name;
  enum class Category { kPreset, kBuilder } category = Category::kPreset;
  std::string description;  // one line, for `stepsim topo --list`
  std::vector<ParamSpec> params;
  std::function<Topology(const ParamReader&)> build;
};

class BuilderRegistry {
 public:
  // A registry holding every built-in preset and builder.
  static BuilderRegistry with_builtins();

  void add(BuilderEntry entry);  // std::logic_error when the name is taken
  const BuilderEntry* find(std::string_view name) const;
  // Entries sorted by category (presets first), then name.
  std::vector<const BuilderEntry*> entries() const;
  std::vector<std::string> names() const;

  // Builds `name` with `params` (a map, or nullopt for all defaults). `where` locates the name
  // for "unknown builder (did you mean ...)" messages.
  Topology build(const std::string& name, std::optional<config::Node> params,
                 const config::Node& where) const;

 private:
  std::vector<BuilderEntry> entries_;
};

// Registration functions of the built-in families (each in its own file).
void register_nvswitch_presets(BuilderRegistry& registry);
void register_fat_tree_builders(BuilderRegistry& registry);
void register_cloudmatrix_presets(BuilderRegistry& registry);
void register_ub_mesh_presets(BuilderRegistry& registry);
void register_torus_builders(BuilderRegistry& registry);

}  // namespace stepsim::topology
