// Finds the full-mesh structure of a communicator group on a topology (GroupShape::mesh): the
// members form a d-dimensional grid in which every line of a dimension is a clique of direct
// accelerator-to-accelerator links (UB-Mesh's nD-FullMesh, the `dimensions` builder's full-mesh
// dimensions, a sub-grid of either such as one row or a 2 x 4 block).
//
// A dimension is a link class: the classes of the links from the first member to other members
// name the dimensions (in class order), the number of such links of a class plus one is the
// dimension's size, and the effective bandwidth of one of them the dimension's bandwidth. The
// group is a mesh when
//  - every member is an accelerator, and the sizes multiply to the group's size;
//  - every member has, to other members, exactly size - 1 links (parallel links count once) of
//    each dimension's class and none of another class;
//  - coordinates, found as below, give every member its own grid point, and every link joins two
//    members that differ in its dimension's coordinate only;
//  - every link joins members that the router keeps on it: the same scale-up domain, or one of
//    the two without a NIC (between domains the router sends traffic through the NICs).
// Links to accelerators outside the group are ignored. Coordinate k of a member is the position,
// in the first member's line of dimension k (ordered by member index), of the member that lies in
// the same component of the links of the other dimensions.
//
// Cost: one pass over the members' links per dimension (a union-find), so a group of a thousand
// ranks with 20 links each takes well under a millisecond; a group whose first member has no
// link to an accelerator (NVSwitch nodes, fat-trees) is rejected after looking at that member's
// links alone.
#pragma once

#include <optional>
#include <span>

#include "sim/collectives/plan/group_shape.hpp"
#include "topology/topology.hpp"

namespace stepsim::collectives {

// The mesh of `members` (group member i on members[i]); nullopt when they do not form one.
std::optional<MeshShape> detect_full_mesh(const topology::Topology& topology,
                                          std::span<const topology::NodeId> members);

}  // namespace stepsim::collectives
