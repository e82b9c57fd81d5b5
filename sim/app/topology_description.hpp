// `describe_topology`: what a topology is made of (counts by kind, each accelerator's bandwidth by
// link class, the fat-tree tiers, bisection, diameter; topology/analysis.hpp) and whether its
// bandwidth is reachable with the default settings
// (sim/collectives/runner/reachable_bandwidth.hpp). The use behind `stepsim topo` and
// stepsim.topology().
#pragma once

#include <string>
#include <vector>

#include "sim/collectives/runner/reachable_bandwidth.hpp"
#include "topology/analysis.hpp"
#include "topology/topology.hpp"

namespace stepsim::app {

struct TopologyDescription {
  topology::Topology topology;
  topology::Analysis analysis;
  std::vector<collectives::ReachCheck> reach;  // empty when not asked
};

// Loads `spec` (a preset with parameters, or a topology YAML file) and describes it; with
// `reach`, runs the reachability check (a large AllReduce and AllToAll per tier).
//   THROWS: InputError for an empty spec, an unknown preset or a bad file (file, key, value).
TopologyDescription describe_topology(const std::string& spec, bool reach);

// One line per preset and builder: name, kind ("preset" or "builder"), description.
std::vector<std::string> topology_builders();

}  // namespace stepsim::app
