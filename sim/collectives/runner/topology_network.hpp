// The flow network of a topology: one engine link per topology link, with the same dense index
// (engine LinkId i is topology LinkIndex i), the topology's latency, and the bandwidth that the
// calibration gives its technology (link_calibration.hpp). After them come the reduction links:
// one per accelerator whose incoming links' preset has a reduction throughput, with that bandwidth
// and no latency; the runner adds it to the path of every transfer of a reducing plan into that
// accelerator. Engine links from topology.num_links() on are these, not topology links.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/collectives/runner/link_calibration.hpp"
#include "sim/engine/flow_network.hpp"
#include "topology/router.hpp"
#include "topology/topology.hpp"

namespace stepsim::collectives {

struct NetworkLinks {
  std::vector<BytesPerSecond> bandwidth;  // what the flow network uses, per link
  // Per link: wire bytes per payload byte of in-switch reduction traffic (effective bandwidth /
  // in-switch effective bandwidth; 1 where the preset has no in-switch figure).
  std::vector<double> in_switch_factor;
  std::vector<std::string> preset;  // the calibration preset applied, or "" (line rate)
  static constexpr std::uint32_t kNoLink = 0xffffffffu;
  // Per topology node: the engine link bounding reductions at that accelerator, or kNoLink.
  std::vector<std::uint32_t> reduction_link;
};

// Adds the topology's links to `network`, which must have none yet (std::logic_error otherwise).
NetworkLinks add_topology_links(engine::FlowNetwork& network, const topology::Topology& topology,
                                const Calibration& calibration);

// Gives `network` the topology's symmetric links (topology/link_symmetry.hpp) for routes in
// `mode`, so that it keeps one link of each group in its flow classes; links of the network
// beyond the topology's (reduction and ceiling links) have none. Nothing when no link has a twin.
// Before the first flow.
void alias_symmetric_links(engine::FlowNetwork& network, const topology::Topology& topology,
                           topology::EcmpMode mode);

// Appends a route's links to `out` as the flow network's sprayed links: a sprayed route's shares,
// or every link of a single path at share 1.
void append_link_shares(const topology::MultipathRoute& route, std::vector<engine::LinkShare>& out);

}  // namespace stepsim::collectives
