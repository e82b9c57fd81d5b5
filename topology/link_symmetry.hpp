// Links that every sprayed route loads alike, so that the flow network may keep one of them
// (engine::FlowNetwork::set_link_aliases): an exact reduction of the max-min problem, not a model.
//
// Twins. Two forwarding nodes that are not accelerators or NICs are twins when they have the same
// kind, the same scale-up group, the same Clos label, and the same neighbours through links of the
// same class and line rate in each direction. The 16 L2 chips of a CloudMatrix384 plane are twins
// (each has one UB link to the plane's L1 chip of every node); so are the spines of a non-blocking
// two-level fat-tree. A group of twins is used only when every link out of its members and out of
// every node with a link into them sprays (topology::link_sprays in the given mode: every link
// in `kSpray`, the links whose class sprays in `kFabric`, none in `kHash` and `kSpread`).
//
// Why the loads are equal. The router splits a flow's share evenly over the next links at every
// node where it sprays, and a node's next links are those to neighbours one hop nearer (by hop
// count, within the route's region, or by Clos label): twins are both nearer or both not. At a
// node whose every out-link sprays, the links to twins get the same share; twins receive the same
// multiset of shares and pass them on alike. So, by induction over the hops, the link u -> X and
// the link u -> Y carry the same share of every route for twins X and Y, as do X -> w and Y -> w,
// and parallel links between the same two nodes when every link out of their source sprays. The
// router sums shares in a canonical order (by value), so the shares are equal to the bit; the
// flow network checks it on every sprayed flow all the same (std::logic_error if not).
//
// Equal capacities (same class and line rate: the calibration gives them the same effective
// bandwidth) and equal loads make their max-min constraints the same constraint: the solver keeps
// one, and the rates are the same bits (the representative is the lowest link index, which the
// solver's tie order between equal fair shares meets first).
#pragma once

#include <vector>

#include "topology/router.hpp"
#include "topology/topology.hpp"

namespace stepsim::topology {

// Per link, the lowest-index link it is equivalent to (itself when none): links with the same
// representative carry the same share of every route that `mode` gives.
std::vector<LinkIndex> symmetric_link_representatives(const Topology& topology, EcmpMode mode);

}  // namespace stepsim::topology
