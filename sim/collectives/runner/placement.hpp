// Where a communicator group sits on a topology: its members' accelerators, and the switch that
// reduces in the network for it (NVLS inside an NVLink domain), if there is one. Also the
// GroupShape the algorithms see.
#pragma once

#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "sim/collectives/plan/group_shape.hpp"
#include "topology/topology.hpp"

namespace stepsim::collectives {

struct Placement {
  std::vector<topology::NodeId> members;
  std::optional<topology::NodeId> reduction_switch;
  // The reducing switch of each of the group's scale-up domains (GroupShape's numbering), when
  // every domain has one; empty otherwise (Endpoint::domain_switch).
  std::vector<topology::NodeId> domain_switches;
  // The SHARP trees of the group's rails (GroupShape::network_tree) and the fabric switch of each
  // tree switch (Endpoint::network_switch), when the group has them.
  std::optional<NetworkTree> network_tree;
  std::vector<topology::NodeId> network_switches;
};

struct PlacementOptions {
  // Look for the SHARP trees of the group's rails (a search over the fabric per rail: skipped for
  // the point-to-point pairs of a step, which never reduce).
  bool network_trees = true;
};

// Members on accelerators()[i] for each i of `ranks`. The reduction switch is a switch flagged for
// in-network reduction in the scale-up domain that holds every member. Throws InputError for a
// rank beyond the topology or a repeated rank. Each domain's reducing switch goes to
// domain_switches when every domain has one.
//
// A rail's SHARP tree: its root is the reducing fabric switch that reaches every NIC of the rail
// in the fewest hops over reducing switches (the lowest common level of a fat-tree: the rail's
// leaf when one leaf holds them all, a spine otherwise; ties to the lowest node id); each NIC
// attaches to its neighbour switch nearest the root, each switch's parent is its neighbour one hop
// nearer the root (lowest node id among equals).
Placement place_group(const topology::Topology& topology, std::span<const std::uint32_t> ranks,
                      const PlacementOptions& options = {});

// Domains are the topology's scale-up groups (a member in none is a domain of its own); the mesh
// is detect_full_mesh's (mesh_detection.hpp).
GroupShape group_shape(const topology::Topology& topology, const Placement& placement);

// Parses `--ranks`: "N" (the first N accelerators), a list "0,2,4", ranges "0-7,16-23", or "all".
// Throws InputError naming `option`, the bad item, or a rank >= `available`.
std::vector<std::uint32_t> parse_ranks(std::string_view text, std::uint32_t available,
                                       std::string_view option = "--ranks");

}  // namespace stepsim::collectives
