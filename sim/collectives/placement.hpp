// Where a communicator group sits on a topology: its members' accelerators, and the switch that
// reduces in the network for it (NVLS inside an NVLink domain), if there is one. Also the
// GroupShape the algorithms see.
#pragma once

#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "sim/collectives/group_shape.hpp"
#include "topology/topology.hpp"

namespace stepsim::collectives {

struct Placement {
  std::vector<topology::NodeId> members;
  std::optional<topology::NodeId> reduction_switch;
  // The reducing switch of each of the group's scale-up domains (GroupShape's numbering), when
  // every domain has one; empty otherwise (Endpoint::domain_switch).
  std::vector<topology::NodeId> domain_switches;
};

// Members on accelerators()[i] for each i of `ranks`. The reduction switch is a switch flagged for
// in-network reduction in the scale-up domain that holds every member. Throws InputError for a
// rank beyond the topology or a repeated rank. Each domain's reducing switch goes to
// domain_switches when every domain has one.
Placement place_group(const topology::Topology& topology, std::span<const std::uint32_t> ranks);

// Domains are the topology's scale-up groups (a member in none is a domain of its own); the mesh
// is detect_full_mesh's (mesh_detection.hpp).
GroupShape group_shape(const topology::Topology& topology, const Placement& placement);

// Parses `--ranks`: "N" (the first N accelerators), a list "0,2,4", ranges "0-7,16-23", or "all".
// Throws InputError naming `option`, the bad item, or a rank >= `available`.
std::vector<std::uint32_t> parse_ranks(std::string_view text, std::uint32_t available,
                                       std::string_view option = "--ranks");

}  // namespace stepsim::collectives
