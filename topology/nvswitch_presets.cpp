// NVLink/NVSwitch machines (DGX A100, H100, H200, B200; GB200 NVL72) and clusters of them on a
// fat-tree (`cluster`, `dgx-h100-superpod`, `selene`). Every figure cites its source; the same
// table is in docs/topology.md.
#include <fmt/format.h>

#include "topology/builder_registry.hpp"
#include "topology/fat_tree.hpp"
#include "topology/nvswitch_domain.hpp"

namespace stepsim::topology {
namespace {

// Latency assumptions (no vendor publishes a per-hop figure we can cite): one NVLink hop into or
// out of the NVSwitch 150 ns, so GPU -> NVSwitch -> GPU is 300 ns; GPU -> NIC over PCIe 500 ns;
// InfiniBand switch traversal plus cable 130 ns per link.
constexpr const char* kNvlinkLatency = "150ns";
constexpr const char* kPcieLatency = "500ns";
constexpr const char* kIbLatency = "130ns";

struct Machine {
  std::string name;
  std::string description;
  NvSwitchDomainSpec spec;
  std::string nic_speed;  // per GPU NIC
};

// PCIe 4.0 x16: 16 GT/s x 16 lanes x 128/130 = 31.5 GB/s per direction; PCIe 5.0 x16: 63 GB/s
// (PCI-SIG base specifications 4.0 and 5.0).
NvSwitchDomainSpec dgx(int nvlink_gb_per_s, int chips, bool nvls, double pcie_gb_per_s) {
  NvSwitchDomainSpec s;
  s.nodes = 1;
  s.gpus_per_node = 8;
  s.nvswitch_chips = chips;
  s.nvlink_per_gpu = BytesPerSecond::gigabytes(nvlink_gb_per_s);
  s.nvlink_latency = parse_time(kNvlinkLatency);
  s.nvls = nvls;
  s.pcie_bandwidth = BytesPerSecond::gigabytes(pcie_gb_per_s);
  s.pcie_latency = parse_time(kPcieLatency);
  return s;
}

std::vector<Machine> machines() {
  std::vector<Machine> m;
  // DGX A100 (NVIDIA DGX A100 System Architecture white paper, 2020): 8 A100 GPUs, 12 NVLink3
  // links x 25 GB/s = 300 GB/s per direction per GPU (600 GB/s bidirectional) through 6
  // second-generation NVSwitch chips (no NVLS); 8 ConnectX-6 200 Gb/s HDR InfiniBand NICs for
  // compute (the 2 storage NICs are not modeled); GPUs and NICs on PCIe 4.0 switches.
  m.push_back({"dgx-a100",
               "DGX A100: 8 A100, NVLink3 300 GB/s per GPU per direction, 6 NVSwitch, "
               "8x 200G HDR",
               dgx(300, 6, false, 31.5), "200Gbps"});
  // DGX H100 (NVIDIA DGX H100 user guide / DGX SuperPOD H100 reference architecture): 8 H100 GPUs,
  // 18 NVLink4 links x 25 GB/s per direction = 450 GB/s per direction per GPU (900 GB/s
  // bidirectional) through 4 third-generation NVSwitch chips with NVLink SHARP; 8 ConnectX-7
  // 400 Gb/s NDR NICs; PCIe 5.0.
  m.push_back({"dgx-h100",
               "DGX H100: 8 H100, NVLink4 450 GB/s per GPU per direction, 4 NVSwitch "
               "(NVLS), 8x 400G NDR",
               dgx(450, 4, true, 63), "400Gbps"});
  // DGX H200 (NVIDIA DGX H200 datasheet): same NVLink4/NVSwitch fabric and ConnectX-7 NICs as
  // DGX H100; only the GPU memory differs.
  m.push_back({"dgx-h200", "DGX H200: 8 H200, same fabric as DGX H100 (450 GB/s NVLink4, 8x 400G)",
               dgx(450, 4, true, 63), "400Gbps"});
  // DGX B200 (NVIDIA DGX B200 datasheet): 8 B200 GPUs, NVLink5 18 links x 50 GB/s = 900 GB/s per
  // direction per GPU (1.8 TB/s bidirectional) through 2 NVLink5 switch chips with NVLS;
  // 8 ConnectX-7 400 Gb/s NICs (4 OSFP ports); PCIe 5.0.
  m.push_back({"dgx-b200",
               "DGX B200: 8 B200, NVLink5 900 GB/s per GPU per direction, 2 NVSwitch "
               "(NVLS), 8x 400G",
               dgx(900, 2, true, 63), "400Gbps"});
  // GB200 NVL72 (NVIDIA GB200 NVL72 product page and datasheet): 72 Blackwell GPUs and 36 Grace
  // CPUs in 18 compute trays (4 GPUs, 2 CPUs each); NVLink5 900 GB/s per direction per GPU
  // (1.8 TB/s bidirectional, 130 TB/s total) through 18 NVLink5 switch chips in 9 switch trays
  // (2 chips each), NVLS capable; Grace-Blackwell NVLink-C2C 900 GB/s bidirectional = 450 GB/s
  // per direction; one ConnectX-7 400 Gb/s NIC per GPU (4 per compute tray).
  NvSwitchDomainSpec nvl72 = dgx(900, 18, true, 63);
  nvl72.nodes = 18;
  nvl72.gpus_per_node = 4;
  nvl72.cpus_per_node = 2;
  nvl72.cpu_link = BytesPerSecond::gigabytes(450);
  m.push_back({"gb200-nvl72",
               "GB200 NVL72: 72 Blackwell GPUs in one NVLink5 domain (900 GB/s per GPU per "
               "direction, 18 NVSwitch chips), 36 Grace CPUs, 72x 400G",
               nvl72, "400Gbps"});
  return m;
}

const Machine* find_machine(const std::vector<Machine>& all, const std::string& name) {
  for (const Machine& m : all) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

NvSwitchDomainSpec apply_overrides(NvSwitchDomainSpec spec, const ParamReader& p) {
  const config::Node bw = p.at("nvlink_bandwidth");
  if (!(bw.is_scalar() && bw.as_string() == "default")) spec.nvlink_per_gpu = bw.as_bandwidth();
  spec.nvlink_latency = p.time("nvlink_latency");
  return spec;
}

std::vector<ParamSpec> machine_params() {
  return {{"nvlink_bandwidth", "default",
           "NVLink bandwidth per GPU per direction (default: the machine's published figure)"},
          {"nvlink_latency", kNvlinkLatency, "GPU-NVSwitch link latency (assumption)"}};
}

// A cluster of `count` scale-up domains of `machine` on a fat-tree.
Topology build_cluster(const std::string& name, const Machine& machine, int count,
                       const ParamReader& p) {
  TopologyBuilder b(name);
  const NvSwitchDomainSpec spec = apply_overrides(machine.spec, p);
  FatTreeSpec fabric = read_fat_tree_spec(p);
  // A fabric too large for its switches is refused before its hosts are built (one NIC per GPU).
  if (spec.nics) {
    check_fat_tree(fabric, static_cast<std::size_t>(count) * static_cast<std::size_t>(spec.nodes),
                   static_cast<std::size_t>(spec.gpus_per_node), p);
  }
  std::vector<std::vector<NodeId>> hosts;
  for (int d = 0; d < count; ++d) {
    const std::string domain = spec.nodes == 1 ? fmt::format("node{}", d) : fmt::format("nvl{}", d);
    DomainBuild built = add_nvswitch_domain(b, spec, domain, domain + ".tray");
    for (auto& h : built.hosts)
      hosts.push_back(std::move(h));
  }
  add_fat_tree(b, fabric, hosts, p);
  return std::move(b).build();
}

}  // namespace

void register_nvswitch_presets(BuilderRegistry& registry) {
  for (const Machine& m : machines()) {
    registry.add(BuilderEntry{m.name, BuilderEntry::Category::kPreset, m.description,
                              machine_params(), [m](const ParamReader& p) {
                                TopologyBuilder b(m.name);
                                add_nvswitch_domain(b, apply_overrides(m.spec, p),
                                                    m.spec.nodes == 1 ? "node0" : "nvl0",
                                                    "nvl0.tray");
                                return std::move(b).build();
                              }});
  }

  // DGX SuperPOD with DGX H100 (NVIDIA DGX SuperPOD H100 reference architecture): scalable units of
  // 32 DGX H100 nodes; compute fabric of QM9700 switches (64 ports of 400 Gb/s NDR), rail-optimized
  // (NIC i of every node on rail i), non-blocking; QM9700 supports SHARPv3, which NCCL uses only
  // when told to (NCCL_COLLNET_ENABLE=1 with the SHARP plugin): `sharp` is off by default, as
  // there.
  {
    std::vector<ParamSpec> params =
        fat_tree_param_specs("auto", "64", "400Gbps", "true", kIbLatency, "false");
    params.insert(params.begin(),
                  ParamSpec{"nodes", "32", "DGX H100 nodes (32 per scalable unit)"});
    for (ParamSpec& s : machine_params())
      params.push_back(s);
    registry.add(BuilderEntry{
        "dgx-h100-superpod", BuilderEntry::Category::kPreset,
        "DGX SuperPOD: DGX H100 nodes on a rail-optimized 400G NDR fat-tree of 64-port QM9700",
        params, [](const ParamReader& p) {
          const auto all = machines();
          return build_cluster("dgx-h100-superpod", *find_machine(all, "dgx-h100"),
                               static_cast<int>(p.integer("nodes", 1, 100'000)), p);
        }});
  }
  // Selene (NVIDIA DGX SuperPOD A100 reference architecture; Selene is its first instance):
  // scalable units of 20 DGX A100 nodes; rail-optimized HDR 200 Gb/s InfiniBand fabric of 40-port
  // QM8700 switches, non-blocking; SHARPv2 capable (off by default, as NCCL's CollNet is).
  {
    std::vector<ParamSpec> params =
        fat_tree_param_specs("auto", "40", "200Gbps", "true", kIbLatency, "false");
    params.insert(params.begin(),
                  ParamSpec{"nodes", "20", "DGX A100 nodes (20 per scalable unit)"});
    for (ParamSpec& s : machine_params())
      params.push_back(s);
    registry.add(BuilderEntry{
        "selene", BuilderEntry::Category::kPreset,
        "Selene-style DGX SuperPOD: DGX A100 nodes on a rail-optimized 200G HDR fat-tree of "
        "40-port QM8700",
        params, [](const ParamReader& p) {
          const auto all = machines();
          return build_cluster("selene", *find_machine(all, "dgx-a100"),
                               static_cast<int>(p.integer("nodes", 1, 100'000)), p);
        }});
  }
  // Generic composition: any NVLink machine above, `nodes` times, on a fat-tree.
  {
    std::vector<ParamSpec> params =
        fat_tree_param_specs("auto", "64", "400Gbps", "true", kIbLatency, "false");
    params.insert(params.begin(), ParamSpec{"nodes", "2", "scale-up domains (machines or racks)"});
    params.insert(
        params.begin(),
        ParamSpec{"machine", "dgx-h100",
                  "scale-up domain: dgx-a100, dgx-h100, dgx-h200, dgx-b200, gb200-nvl72"});
    for (ParamSpec& s : machine_params())
      params.push_back(s);
    registry.add(
        BuilderEntry{"cluster", BuilderEntry::Category::kBuilder,
                     "NVLink scale-up domains joined by a fat-tree through one NIC per GPU", params,
                     [](const ParamReader& p) {
                       const auto all = machines();
                       std::vector<std::string> names;
                       for (const Machine& m : all)
                         names.push_back(m.name);
                       const std::string machine = p.at("machine").as_choice(names);
                       return build_cluster("cluster", *find_machine(all, machine),
                                            static_cast<int>(p.integer("nodes", 1, 100'000)), p);
                     }});
  }
}

}  // namespace stepsim::topology
