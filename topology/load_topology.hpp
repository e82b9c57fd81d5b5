// Where a topology is asked for (`topology:` in a scenario, `--topology` or `stepsim topo` on the
// command line), any of these is accepted:
//   - a preset or builder with parameters: "dgx-h100-superpod:nodes=4,rail_optimized=false";
//   - a YAML file (a name ending in .yaml or .yml), relative to the file that names it;
//   - an inline map: {preset: NAME, params: {...}} or {builder: NAME, params: {...}}, or an
//   explicit
//     graph {nodes: [...], links: [...], groups: [...]} (graph_reader.hpp).
// Maps may also carry `efficiency: {CLASS: 0.9, ...}`: the fraction of line rate a link of that
// class delivers (effective bandwidth = line rate x efficiency).
#pragma once

#include <filesystem>
#include <string_view>

#include "sim/common/config.hpp"
#include "topology/builder_registry.hpp"
#include "topology/topology.hpp"

namespace stepsim::topology {

Topology load_topology(const config::Node& node);
Topology load_topology(const config::Node& node, const BuilderRegistry& registry);

// For the command line: `spec` is a preset spec or a file path relative to `base_dir`.
Topology load_topology_spec(std::string_view spec, const std::filesystem::path& base_dir);
Topology load_topology_spec(std::string_view spec, const std::filesystem::path& base_dir,
                            const BuilderRegistry& registry);

}  // namespace stepsim::topology
