#include "sim/collectives/topology_network.hpp"

#include <stdexcept>

namespace stepsim::collectives {

NetworkLinks add_topology_links(engine::FlowNetwork& network, const topology::Topology& topology,
                                const Calibration& calibration) {
  if (network.link_count() != 0)
    throw std::logic_error("add_topology_links: the flow network already has links (bug)");
  NetworkLinks links;
  const std::size_t n = topology.num_links();
  links.bandwidth.reserve(n);
  links.in_switch_factor.assign(n, 1.0);
  links.preset.assign(n, "");
  for (std::uint32_t i = 0; i < n; ++i) {
    const topology::LinkIndex link(i);
    const auto& cls = topology.link_class(link);
    BytesPerSecond bandwidth = topology.effective_bandwidth(link);
    // A class efficiency the user set wins; otherwise a matching preset calibrates the link.
    if (cls.efficiency == 1.0) {
      if (const LinkPreset* preset = calibration.find(cls.name, topology.bandwidth(link))) {
        bandwidth = preset->effective;
        links.preset[i] = preset->name;
        if (preset->in_switch)
          links.in_switch_factor[i] = preset->effective.value() / preset->in_switch->value();
      }
    }
    links.bandwidth.push_back(bandwidth);
    const engine::LinkId id = network.add_link(bandwidth, topology.latency(link));
    if (id.value != i) throw std::logic_error("add_topology_links: link ids diverge (bug)");
  }
  return links;
}

}  // namespace stepsim::collectives
