// The YAML format for an explicit graph (any topology):
//
//   name: two-nodes                      # optional
//   nodes:
//     - {name: gpu0, kind: accelerator}
//     - {name: "n1.gpu{}", kind: accelerator, count: 4}     # n1.gpu0 .. n1.gpu3
//     - {name: sw, kind: switch, in_network_reduction: true}
//     - {name: nic0, kind: nic, owner: gpu0}                # owner: the accelerator it serves
//     - {name: gpu9, kind: accelerator, forwards: true}     # a direct network's node
//   links:
//     - {from: gpu0, to: sw, bandwidth: 450GB/s, latency: 150ns, class: nvlink, duplex: true}
//     - {from: sw, to: nic0, bandwidth: 50GB/s}             # one direction; latency 0, class
//     "link"
//   groups:
//     - {kind: scale-up, name: box0, members: [gpu0, sw]}   # node, rack, pod, plane, scale-up
//
// Every error names the file, line, key and value: unknown node names (with a suggestion),
// duplicate names, non-positive bandwidths, unknown kinds, disconnected accelerators.
#pragma once

#include "sim/common/config.hpp"
#include "topology/topology.hpp"

namespace stepsim::topology {

// Reads an explicit graph from a map with `nodes:` and `links:`.
Topology read_graph(const config::Node& node);

}  // namespace stepsim::topology
