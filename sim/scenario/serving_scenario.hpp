// A serving scenario: the YAML file `stepsim serve` reads (docs/serving.md). It has the keys of a
// training scenario that describe the hardware and the model (`topology:`, `model:`, `compute:`,
// `network:`) and a `serving:` section in place of `parallelism:` and `training:`. Loading
// validates all of it before anything runs; every error names the file, line, column and key.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "sim/collectives/runner/network_options.hpp"
#include "sim/common/config.hpp"
#include "topology/topology.hpp"
#include "workloads/serving_spec.hpp"

namespace stepsim {

struct ServingScenario {
  std::filesystem::path file;
  config::Document document;  // as read, overrides applied
  std::string name;           // `name:`, or the file's stem
  std::string description;
  topology::Topology topology;
  std::string topology_spec;  // as written, for reports
  workloads::ServingSpec serving;
  collectives::NetworkOptions network;
};

// Reads `file`, applies `overrides` ("key.path=value", in order) and validates every section,
// the pools against the topology's accelerators included. Throws InputError on any problem.
ServingScenario load_serving_scenario(const std::filesystem::path& file,
                                      const std::vector<std::string>& overrides);
// The same from a document already read; `name` is the default of `name:`.
ServingScenario load_serving_scenario(config::Document document, const std::string& name,
                                      const std::vector<std::string>& overrides);

}  // namespace stepsim
