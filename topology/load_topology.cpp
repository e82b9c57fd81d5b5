#include "topology/load_topology.hpp"

#include <fmt/format.h>

#include "sim/common/input_error.hpp"
#include "topology/graph_reader.hpp"

namespace stepsim::topology {
namespace {

bool is_file_name(std::string_view text) {
  return text.ends_with(".yaml") || text.ends_with(".yml");
}

// A map from link class names to settings (`efficiency: {nvlink: 0.9}`, `multipath: {ub:
// spray}`): `set(name, value)` applies one entry and returns false when the topology has no class
// of that name, which is reported at the entry with the classes it has.
template <class Set>
void apply_per_class(Topology& topology, const config::Node& map, Set set) {
  std::vector<std::string> classes;
  for (const LinkClass& c : topology.link_classes())
    classes.push_back(c.name);
  for (const auto& [name, value] : map.entries()) {
    if (!set(name, value)) {
      const std::string suggestion = config::closest_match(name, classes);
      value.fail_with(fmt::format(
          "topology '{}' has no link class '{}'{}; its classes: {}", topology.name(), name,
          suggestion.empty() ? "" : fmt::format(" (did you mean '{}'?)", suggestion),
          fmt::join(classes, ", ")));
    }
  }
}

void apply_efficiency(Topology& topology, const config::Node& map) {
  apply_per_class(topology, map, [&](const std::string& name, const config::Node& value) {
    return topology.set_efficiency(name, value.as_double(1e-6, 1.0));
  });
}

void apply_multipath(Topology& topology, const config::Node& map) {
  apply_per_class(topology, map, [&](const std::string& name, const config::Node& value) {
    return topology.set_multipath(name, *parse_multipath(value.as_choice({"hash", "spray"})));
  });
}

// "name:key=value,key=value" -> (name, YAML map text).
Topology build_spec(std::string_view spec, const config::Node& where,
                    const BuilderRegistry& registry) {
  const std::size_t colon = spec.find(':');
  const std::string name(spec.substr(0, colon));
  std::string yaml;
  if (colon != std::string_view::npos) {
    std::string_view rest = spec.substr(colon + 1);
    while (!rest.empty()) {
      // The next comma outside brackets: values may be YAML lists ("oversubscription=[3,3]").
      std::size_t comma = std::string_view::npos;
      int depth = 0;
      for (std::size_t i = 0; i < rest.size() && comma == std::string_view::npos; ++i) {
        if (rest[i] == '[' || rest[i] == '{') ++depth;
        if (rest[i] == ']' || rest[i] == '}') --depth;
        if (rest[i] == ',' && depth == 0) comma = i;
      }
      const std::string_view item = rest.substr(0, comma);
      const std::size_t eq = item.find('=');
      if (eq == std::string_view::npos || eq == 0) {
        where.fail_with(
            fmt::format("topology spec '{}': expected key=value, got '{}'", spec, item));
      }
      yaml += fmt::format("{}: {}\n", item.substr(0, eq), item.substr(eq + 1));
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
  }
  // Messages name where the spec was given too: "s.yaml:2:11: topology: topology spec '...':1:8".
  const config::Document params = config::Document::parse(
      yaml, fmt::format("{}: {}: topology spec '{}'", where.location(), where.path(), spec));
  const config::Node root = params.root();
  return registry.build(name, root.is_null() ? std::nullopt : std::optional<config::Node>(root),
                        where);
}

Topology load_file(const std::filesystem::path& path, const BuilderRegistry& registry) {
  const config::Document doc = config::Document::load_file(path);
  return load_topology(doc.root(), registry);
}

// A file named in a scenario: a missing file is reported where it is named.
Topology load_file(const config::Node& named_by, const BuilderRegistry& registry) {
  const config::Document doc = config::Document::load_file(named_by.as_path(), named_by);
  return load_topology(doc.root(), registry);
}

}  // namespace

Topology load_topology(const config::Node& node) {
  return load_topology(node, BuilderRegistry::with_builtins());
}

Topology load_topology(const config::Node& node, const BuilderRegistry& registry) {
  if (node.is_scalar()) {
    const std::string text = node.as_string();
    if (is_file_name(text)) return load_file(node, registry);
    return build_spec(text, node, registry);
  }
  if (!node.is_map()) {
    node.fail(
        "a preset (like dgx-h100-superpod:nodes=4), a YAML file, or a map with preset:, "
        "builder: or nodes:");
  }
  Topology topology;
  if (node.has("nodes") && !node.has("preset") && !node.has("builder")) {
    topology = read_graph(node);
  } else {
    node.allow_keys(
        {"preset", "builder", "params", "efficiency", "multipath", "collective_library", "name"});
    const bool preset = node.has("preset");
    if (preset == node.has("builder")) {
      node.fail("a map with exactly one of preset:, builder: (or nodes: for an explicit graph)");
    }
    const config::Node which = node.at(preset ? "preset" : "builder");
    topology = registry.build(which.as_string(), node.find("params"), which);
    if (auto name = node.find("name")) topology.set_name(name->as_string());
  }
  if (auto efficiency = node.find("efficiency")) apply_efficiency(topology, *efficiency);
  if (auto multipath = node.find("multipath")) apply_multipath(topology, *multipath);
  if (auto library = node.find("collective_library"))
    topology.set_collective_library(
        *parse_collective_library(library->as_choice({"nccl", "hccl"})));
  return topology;
}

Topology load_topology_spec(std::string_view spec, const std::filesystem::path& base_dir) {
  return load_topology_spec(spec, base_dir, BuilderRegistry::with_builtins());
}

Topology load_topology_spec(std::string_view spec, const std::filesystem::path& base_dir,
                            const BuilderRegistry& registry) {
  if (is_file_name(spec)) {
    std::filesystem::path path(spec);
    if (path.is_relative()) path = base_dir / path;
    return load_file(path, registry);
  }
  // A one-entry document, so that messages name the spec as "topology".
  std::string quoted;
  for (char c : spec) {
    if (c == '"' || c == '\\') quoted += '\\';
    quoted += c;
  }
  const config::Document doc =
      config::Document::parse(fmt::format("topology: \"{}\"", quoted), "command line");
  return build_spec(spec, doc.root().at("topology"), registry);
}

}  // namespace stepsim::topology
