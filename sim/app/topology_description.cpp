#include "sim/app/topology_description.hpp"

#include <fmt/format.h>
#include <filesystem>

#include "sim/common/input_error.hpp"
#include "topology/builder_registry.hpp"
#include "topology/load_topology.hpp"

namespace stepsim::app {

TopologyDescription describe_topology(const std::string& spec, bool reach) {
  if (spec.empty())
    throw InputError("topo: give a preset (see `stepsim topo --list`) or a YAML file");
  const topology::BuilderRegistry registry = topology::BuilderRegistry::with_builtins();
  TopologyDescription d;
  d.topology = topology::load_topology_spec(spec, std::filesystem::current_path(), registry);
  d.analysis = topology::analyze(d.topology);
  if (reach) d.reach = collectives::check_reachable(d.topology);
  return d;
}

std::vector<std::string> topology_builders() {
  const topology::BuilderRegistry registry = topology::BuilderRegistry::with_builtins();
  std::vector<std::string> lines;
  for (const topology::BuilderEntry* e : registry.entries())
    lines.push_back(
        fmt::format("{:<20} {:<7} {}", e->name,
                    e->category == topology::BuilderEntry::Category::kPreset ? "preset" : "builder",
                    e->description));
  return lines;
}

}  // namespace stepsim::app
