// Exports a topology through Boost.Graph's writers: Graphviz DOT (write_graphviz) and GraphML
// (write_graphml with dynamic_properties). Vertices carry name and kind; edges carry bandwidth
// (bytes per second), latency (picoseconds) and link class.
#pragma once

#include <iosfwd>

#include "topology/topology.hpp"

namespace stepsim::topology {

void write_dot(std::ostream& out, const Topology& topology);
void write_graphml(std::ostream& out, const Topology& topology);

}  // namespace stepsim::topology
