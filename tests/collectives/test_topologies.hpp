// Small topologies for the collective tests: a star (every accelerator on one switch, the shape of
// an NVSwitch node), a full mesh (a dedicated link per ordered pair) in one or several
// dimensions, two levels (stars joined by one NIC per accelerator and a spine), and the built-in
// presets.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/common/config.hpp"
#include "topology/builder_registry.hpp"
#include "topology/load_topology.hpp"
#include "topology/topology_builder.hpp"

namespace stepsim::collectives::testing {

inline topology::Topology star(int n, BytesPerSecond bandwidth, Time latency,
                               bool in_network_reduction = false) {
  using namespace topology;
  TopologyBuilder b("star");
  const std::uint16_t cls = b.link_class("test");
  const NodeId sw = b.add_node("sw", NodeKind::kSwitch, NodeOptions{in_network_reduction, {}, {}});
  std::vector<NodeId> domain{sw};
  for (int i = 0; i < n; ++i) {
    const NodeId g = b.add_node("gpu" + std::to_string(i), NodeKind::kAccelerator);
    b.add_duplex(g, sw, bandwidth, latency, cls);
    domain.push_back(g);
  }
  b.add_group(GroupKind::kScaleUp, "star", domain);
  return std::move(b).build();
}

inline topology::Topology mesh(int n, BytesPerSecond bandwidth, Time latency) {
  using namespace topology;
  TopologyBuilder b("mesh");
  const std::uint16_t cls = b.link_class("test");
  std::vector<NodeId> gpus;
  for (int i = 0; i < n; ++i)
    gpus.push_back(b.add_node("gpu" + std::to_string(i), NodeKind::kAccelerator));
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j)
      b.add_duplex(gpus[i], gpus[j], bandwidth, latency, cls);
  return std::move(b).build();
}

// A full mesh in several dimensions: accelerator r at coordinates (r mod sizes[0], ...), the first
// dimension varying fastest; every two accelerators that differ in dimension k only are joined by
// a duplex link of class "dim<k>" (bandwidth `bandwidth`, latency `latency`). No scale-up group,
// no NICs.
inline topology::Topology mesh_grid(const std::vector<int>& sizes, BytesPerSecond bandwidth,
                                    Time latency) {
  using namespace topology;
  TopologyBuilder b("mesh-grid");
  int total = 1;
  for (int size : sizes)
    total *= size;
  std::vector<NodeId> npus;
  for (int r = 0; r < total; ++r)
    npus.push_back(b.add_node("npu" + std::to_string(r), NodeKind::kAccelerator,
                              NodeOptions{false, true, NodeId()}));
  int stride = 1;
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    const std::uint16_t cls = b.link_class("dim" + std::to_string(k));
    for (int r = 0; r < total; ++r)
      for (int c = (r / stride) % sizes[k] + 1; c < sizes[k]; ++c)
        b.add_duplex(npus[r], npus[r + (c - (r / stride) % sizes[k]) * stride], bandwidth, latency,
                     cls);
    stride *= sizes[k];
  }
  return std::move(b).build();
}

// `domains` stars of `per_domain` accelerators (bandwidth `inside`, the scale-up domains), each
// accelerator also on its own NIC, every NIC on one spine switch (bandwidth `across` on both
// links): inside a domain the route is accelerator -> star -> accelerator (2 links), across it is
// accelerator -> NIC -> spine -> NIC -> accelerator (4 links). Every link has latency `latency`.
// With `sharp` the spine reduces (InfiniBand SHARP), with `nvls` every domain's star does.
inline topology::Topology two_level(int domains, int per_domain, BytesPerSecond inside,
                                    BytesPerSecond across, Time latency, bool sharp = false,
                                    bool nvls = false) {
  using namespace topology;
  TopologyBuilder b("two-level");
  const std::uint16_t cls = b.link_class("test");
  const NodeId spine = b.add_node("spine", NodeKind::kSwitch, NodeOptions{sharp, {}, {}});
  for (int d = 0; d < domains; ++d) {
    const std::string prefix = "d" + std::to_string(d) + ".";
    const NodeId sw = b.add_node(prefix + "sw", NodeKind::kSwitch, NodeOptions{nvls, {}, {}});
    std::vector<NodeId> domain{sw};
    for (int i = 0; i < per_domain; ++i) {
      const NodeId g = b.add_node(prefix + "gpu" + std::to_string(i), NodeKind::kAccelerator);
      const NodeId nic = b.add_node(prefix + "nic" + std::to_string(i), NodeKind::kNic);
      b.add_duplex(g, sw, inside, latency, cls);
      b.add_duplex(g, nic, across, latency, cls);
      b.add_duplex(nic, spine, across, latency, cls);
      domain.push_back(g);
    }
    b.add_group(GroupKind::kScaleUp, prefix + "star", domain);
  }
  return std::move(b).build();
}

// A built-in preset with parameters written as a YAML map, e.g. preset("selene", "{nodes: 2}").
inline topology::Topology preset(const std::string& name, const std::string& params = "{}") {
  const auto doc = config::Document::parse(params, "<test>");
  return topology::BuilderRegistry::with_builtins().build(name, doc.root(), doc.root());
}

// Ranks 0..n-1.
inline std::vector<std::uint32_t> first_ranks(std::uint32_t n) {
  std::vector<std::uint32_t> ranks(n);
  for (std::uint32_t r = 0; r < n; ++r)
    ranks[r] = r;
  return ranks;
}

// A topology written as a YAML map the way a scenario gives it, e.g.
// "{preset: cloudmatrix384, multipath: {ub: hash}}".
inline topology::Topology preset_yaml(const std::string& yaml) {
  const auto doc = config::Document::parse(yaml, "<test>");
  return topology::load_topology(doc.root());
}

}  // namespace stepsim::collectives::testing
