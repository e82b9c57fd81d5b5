#include "topology/nvswitch_domain.hpp"

#include <fmt/format.h>

namespace stepsim::topology {

DomainBuild add_nvswitch_domain(TopologyBuilder& b, const NvSwitchDomainSpec& spec,
                                const std::string& domain, const std::string& node_prefix) {
  DomainBuild out;
  const std::uint16_t nvlink = b.link_class("nvlink");
  // A GPU stripes its NVLink traffic over all its links, so over every NVSwitch chip (NVIDIA,
  // "NVIDIA DGX H100 System" and NVLink/NVSwitch architecture documents): no per-flow hashing.
  // (The domain's switch chips are one node here, so this matters to graphs that split them.)
  b.set_multipath(nvlink, Multipath::kSpray);
  const NodeId nvswitch = b.add_node(fmt::format("{}.nvswitch", domain), NodeKind::kSwitch,
                                     NodeOptions{spec.nvls, std::nullopt, NodeId()});
  std::vector<NodeId> scale_up{nvswitch};
  for (int s = 0; s < spec.nodes; ++s) {
    const std::string server = spec.nodes == 1 ? domain : fmt::format("{}{}", node_prefix, s);
    std::vector<NodeId> members;
    std::vector<NodeId> gpus;
    std::vector<NodeId> host_nics;
    for (int g = 0; g < spec.gpus_per_node; ++g) {
      const NodeId gpu =
          b.add_node(fmt::format("{}.{}{}", server, spec.gpu_name, g), NodeKind::kAccelerator);
      b.add_duplex(gpu, nvswitch, spec.nvlink_per_gpu, spec.nvlink_latency, nvlink);
      gpus.push_back(gpu);
      members.push_back(gpu);
      scale_up.push_back(gpu);
      out.accelerators.push_back(gpu);
    }
    if (spec.cpus_per_node > 0) {
      const std::uint16_t c2c = b.link_class("nvlink-c2c");
      const int per_cpu = spec.gpus_per_node / spec.cpus_per_node;
      for (int c = 0; c < spec.cpus_per_node; ++c) {
        // CPUs do not forward GPU traffic: GPU-GPU traffic takes the NVSwitch.
        const NodeId cpu = b.add_node(fmt::format("{}.cpu{}", server, c), NodeKind::kCpu,
                                      NodeOptions{false, false, NodeId()});
        for (int g = c * per_cpu; g < (c + 1) * per_cpu; ++g) {
          b.add_duplex(cpu, gpus[static_cast<std::size_t>(g)], spec.cpu_link, spec.nvlink_latency,
                       c2c);
        }
        members.push_back(cpu);
        scale_up.push_back(cpu);
      }
    }
    if (spec.nics) {
      const std::uint16_t pcie = b.link_class("pcie");
      for (int g = 0; g < spec.gpus_per_node; ++g) {
        const NodeId gpu = gpus[static_cast<std::size_t>(g)];
        const NodeId nic = b.add_node(fmt::format("{}.nic{}", server, g), NodeKind::kNic,
                                      NodeOptions{false, std::nullopt, gpu});
        b.add_duplex(gpu, nic, spec.pcie_bandwidth, spec.pcie_latency, pcie);
        members.push_back(nic);
        host_nics.push_back(nic);
      }
    }
    if (spec.nodes == 1) members.push_back(nvswitch);
    b.add_group(GroupKind::kNode, server, std::move(members));
    out.hosts.push_back(std::move(host_nics));
  }
  if (spec.nodes > 1) {
    std::vector<NodeId> rack = scale_up;
    b.add_group(GroupKind::kRack, domain, std::move(rack));
  }
  b.add_group(GroupKind::kScaleUp, domain, std::move(scale_up));
  return out;
}

}  // namespace stepsim::topology
