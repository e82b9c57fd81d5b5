#include "sim/collectives/runner/topology_network.hpp"

#include <algorithm>
#include <optional>
#include <stdexcept>

#include "topology/link_symmetry.hpp"

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
    // A class efficiency the user set wins (1.0 included); otherwise a matching preset
    // calibrates the link.
    if (!cls.efficiency) {
      if (const LinkPreset* preset = calibration.find(cls.name, topology.bandwidth(link))) {
        bandwidth = preset->effective;
        links.preset[i] = preset->name;
        if (preset->in_switch)
          links.in_switch_factor[i] = preset->effective.value() / preset->in_switch->value();
      }
    }
    links.bandwidth.push_back(bandwidth);
    const engine::LinkId id = network.add_link(bandwidth, topology.latency(link));
    if (id.value() != i) throw std::logic_error("add_topology_links: link ids diverge (bug)");
  }
  // Reduction links, in accelerator order (deterministic ids).
  links.reduction_link.assign(topology.num_nodes(), NetworkLinks::kNoLink);
  for (topology::NodeId accelerator : topology.accelerators()) {
    std::optional<double> rate;
    for (topology::LinkIndex in : topology.in_links(accelerator)) {
      const LinkPreset* preset =
          links.preset[in.value()].empty()
              ? nullptr
              : calibration.find(topology.link_class(in).name, topology.bandwidth(in));
      if (preset == nullptr || !preset->reduction) continue;
      rate = std::min(rate.value_or(preset->reduction->value()), preset->reduction->value());
    }
    if (rate)
      links.reduction_link[accelerator.value()] =
          network.add_link(BytesPerSecond(*rate), Time::zero()).value();
  }
  return links;
}

void alias_symmetric_links(engine::FlowNetwork& network, const topology::Topology& topology,
                           topology::EcmpMode mode) {
  const std::vector<topology::LinkIndex> twins =
      topology::symmetric_link_representatives(topology, mode);
  std::vector<engine::LinkId> representative;
  representative.reserve(network.link_count());
  bool any = false;
  for (std::uint32_t i = 0; i < network.link_count(); ++i) {
    const std::uint32_t r = i < twins.size() ? twins[i].value() : i;
    any = any || r != i;
    representative.push_back(engine::LinkId{r});
  }
  if (any) network.set_link_aliases(representative);
}

void append_link_shares(const topology::MultipathRoute& route,
                        std::vector<engine::LinkShare>& out) {
  for (const topology::LinkShare& s : route.shares)
    out.push_back({engine::LinkId{s.link.value()}, s.share});
  for (const topology::LinkIndex l : route.path)
    out.push_back({engine::LinkId{l.value()}, 1.0});
}

}  // namespace stepsim::collectives
