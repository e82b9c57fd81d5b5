// Writers of a topology description (sim/app/topology_description.hpp): the text of `stepsim
// topo` and its `--json` (keys in docs/topology.md, bandwidths in bytes per second).
#pragma once

#include <iosfwd>
#include <nlohmann/json.hpp>

#include "sim/app/topology_description.hpp"

namespace stepsim::app {

void write_topology_text(std::ostream& out, const TopologyDescription& description);

nlohmann::json topology_json(const TopologyDescription& description);

}  // namespace stepsim::app
