// NVLink scale-up domains: GPUs joined by NVSwitch chips (a DGX/HGX node of 8 GPUs, or a GB200
// NVL72 rack of 72 GPUs), each GPU with its own NIC for the scale-out fabric.
//
// The NVSwitch chips are modeled as ONE logical switch vertex ("<domain>.nvswitch") with one duplex
// link per GPU carrying the GPU's full NVLink bandwidth per direction. This is exact for flow-level
// sharing: every GPU spreads its NVLink ports over all the physical NVSwitch chips and every
// transfer uses all of them in parallel, so the chips behave as one non-blocking crossbar whose
// only constraints are the GPUs' own NVLink bandwidths. The vertex is flagged for in-network
// reduction when the chips support NVLink SHARP (NVLS, third-generation NVSwitch and later).
#pragma once

#include <string>
#include <vector>

#include "topology/topology_builder.hpp"

namespace stepsim::topology {

struct NvSwitchDomainSpec {
  std::string gpu_name = "gpu";  // vertex names: "<node>.gpu3"
  int nodes = 1;                 // servers or compute trays in the domain
  int gpus_per_node = 8;
  int cpus_per_node = 0;          // Grace CPUs on the GPUs' NVLink-C2C (GB200)
  BytesPerSecond cpu_link;        // CPU-GPU link, per direction
  int nvswitch_chips = 4;         // physical chips the logical switch stands for
  BytesPerSecond nvlink_per_gpu;  // per direction
  Time nvlink_latency;            // GPU -> switch, and switch -> GPU
  bool nvls = true;
  bool nics = true;               // one NIC per GPU
  BytesPerSecond pcie_bandwidth;  // GPU-NIC link, per direction
  Time pcie_latency;
};

// The nodes one domain added: accelerators in order, and the NICs grouped by server/tray.
struct DomainBuild {
  std::vector<NodeId> accelerators;
  std::vector<std::vector<NodeId>> hosts;
};

// Adds a domain named `domain` (its servers are "<node_prefix><i>", or the domain itself when it
// has one server) with groups: node per server, scale-up (and rack, for multi-server domains).
DomainBuild add_nvswitch_domain(TopologyBuilder& builder, const NvSwitchDomainSpec& spec,
                                const std::string& domain, const std::string& node_prefix);

}  // namespace stepsim::topology
