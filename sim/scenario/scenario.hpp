// A scenario: the YAML file a user writes to describe one simulation (a topology, a model, a
// parallel layout, training settings, collective settings). Loading validates all of it before
// anything runs; every error names the file, line, column and key path (docs/scenario.md).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "sim/collectives/runner/network_options.hpp"
#include "sim/common/config.hpp"
#include "topology/router.hpp"
#include "topology/topology.hpp"
#include "workloads/workload_spec.hpp"

namespace stepsim {

struct Scenario {
  std::filesystem::path file;
  config::Document document;  // as read, includes expanded and overrides applied
  std::string name;           // `name:`, or the file's stem
  std::string description;
  topology::Topology topology;
  std::string topology_spec;  // as written, for reports
  workloads::WorkloadSpec workload;
  collectives::NetworkOptions network;  // the `network:` section
};

// Reads `file`, applies `overrides` ("key.path=value", in order) and validates every section,
// including the layout against the topology's accelerator count. Throws InputError on any problem.
Scenario load_scenario(const std::filesystem::path& file,
                       const std::vector<std::string>& overrides);
// The same from a document already read (config::Document::parse of a scenario given as text, as
// the Python module does for a dict); `name` is the default of `name:`.
Scenario load_scenario(config::Document document, const std::string& name,
                       const std::vector<std::string>& overrides);

// Reads the `network:` section (absent: the defaults).
collectives::NetworkOptions parse_network_options(const config::Node* network);

}  // namespace stepsim
