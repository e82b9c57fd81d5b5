// A scenario: the YAML file a user writes to describe one simulation (a topology, a model, a
// parallel layout, training settings, collective settings). Loading validates all of it before
// anything runs; every error names the file, line, column and key path (docs/scenario.md).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "sim/collectives/link_calibration.hpp"
#include "sim/collectives/plan_options.hpp"
#include "sim/common/config.hpp"
#include "topology/router.hpp"
#include "topology/topology.hpp"
#include "workloads/workload_spec.hpp"

namespace stepsim {

// The `network:` section: how collectives become flows.
struct NetworkSettings {
  std::string algorithm = "auto";  // a collectives registry name
  bool calibrated = true;          // calibrated link presets, or line rate
  collectives::Calibration calibration = collectives::calibrated_presets();
  collectives::PlanOptions plan = calibration.plan_options();
  // How transfers cross parallel links: as the topology's link classes say (fabric), or hashed,
  // sprayed or spread everywhere.
  topology::EcmpMode ecmp = topology::EcmpMode::kFabric;
  // engine::FlowNetworkOptions::idle_tolerance: 0 is exact max-min; a small fraction (0.05)
  // defers re-solves after departures, for large all-to-all heavy runs (docs/collectives.md).
  double idle_tolerance = 0.0;
};

struct Scenario {
  std::filesystem::path file;
  config::Document document;  // as read, includes expanded and overrides applied
  std::string name;           // `name:`, or the file's stem
  std::string description;
  topology::Topology topology;
  std::string topology_spec;  // as written, for reports
  workloads::WorkloadSpec workload;
  NetworkSettings network;
};

// Reads `file`, applies `overrides` ("key.path=value", in order) and validates every section,
// including the layout against the topology's accelerator count. Throws InputError on any problem.
Scenario load_scenario(const std::filesystem::path& file,
                       const std::vector<std::string>& overrides);

// Reads the `network:` section (absent: the defaults).
NetworkSettings parse_network_settings(const config::Node* network);

}  // namespace stepsim
