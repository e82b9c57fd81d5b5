// Figures that describe a topology, for `stepsim topo`: counts by kind, each accelerator's
// bandwidth by link class, per-tier figures of fat-tree fabrics, bisection bandwidth and the
// diameter in hops among accelerators. Each figure says how it was computed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "topology/topology.hpp"

namespace stepsim::topology {

struct AnalysisOptions {
  // Max-flow bisection only up to this many links (it is superlinear in the graph size).
  std::size_t max_flow_link_limit = 200'000;
  // Diameter from every accelerator up to this many; beyond, from this many evenly spaced ones.
  std::size_t diameter_sources = 256;
};

// Bandwidth one accelerator can send through the links of one class, counting links that leave
// the accelerator or a node it owns (its dies, its NICs). Min and max over all accelerators.
struct ClassBandwidth {
  std::string link_class;
  BytesPerSecond min;
  BytesPerSecond max;
};

struct Bisection {
  bool computed = false;
  BytesPerSecond bandwidth;  // one direction, across the cut
  std::string method;
};

struct Diameter {
  std::uint32_t hops = 0;
  std::size_t sources = 0;  // accelerators searched from
  bool exact = false;       // every accelerator was a source
};

struct Analysis {
  std::vector<std::pair<NodeKind, std::size_t>> counts;  // every kind, in kAllNodeKinds order
  std::size_t links = 0;
  std::vector<ClassBandwidth> per_accelerator;  // classes in the topology's class order
  Bisection bisection;
  Diameter diameter;
};

Analysis analyze(const Topology& topology, const AnalysisOptions& options = {});

// Max-flow (Boost push-relabel) from the first half of the accelerators (topology order) to the
// second half, with link bandwidths as capacities and no transit through nodes that do not
// forward. This is the bisection bandwidth of the topology-order split: the bisection width for the
// symmetric topologies built in, and an upper bound on it in general.
BytesPerSecond max_flow_bisection(const Topology& topology);

// Longest shortest path (in links) from `sources` to any accelerator, through forwarding nodes.
std::uint32_t eccentricity_max(const Topology& topology, const std::vector<NodeId>& sources);

}  // namespace stepsim::topology
