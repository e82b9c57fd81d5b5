// Direct and per-dimension networks, as ASTRA-sim's network files express them:
//  - `dimensions`: ranks laid out on dimensions (the first varies fastest); in each dimension the
//    ranks that differ only in that coordinate are joined by a Ring, a FullyConnected mesh or a
//    Switch (one switch vertex per such line, one duplex link per rank). Per dimension: size,
//    topology, bandwidth (per link, per direction) and latency.
//  - `torus`: every dimension a Ring (2D or 3D torus, wraparound links).
// Accelerators forward traffic (direct network); the whole network is one scale-up domain.
#include <fmt/format.h>

#include "topology/builder_registry.hpp"
#include "topology/topology_builder.hpp"

namespace stepsim::topology {
namespace {

struct Dimension {
  int size = 2;
  std::string kind = "ring";  // ring, full-mesh, switch
  BytesPerSecond bandwidth;
  Time latency;
};

Topology build_dimensions(const std::string& name, const std::vector<Dimension>& dims) {
  TopologyBuilder b(name);
  std::size_t total = 1;
  for (const Dimension& d : dims)
    total *= static_cast<std::size_t>(d.size);
  std::vector<NodeId> all;
  for (std::size_t r = 0; r < total; ++r) {
    all.push_back(b.add_node(fmt::format("npu{}", r), NodeKind::kAccelerator,
                             NodeOptions{false, true, NodeId()}));
  }
  std::size_t stride = 1;
  for (std::size_t k = 0; k < dims.size(); ++k) {
    const Dimension& d = dims[k];
    const auto size = static_cast<std::size_t>(d.size);
    const std::uint16_t cls = b.link_class(fmt::format("dim{}", k));
    std::size_t line_index = 0;
    // Each line: the ranks r0 + i * stride, i = 0..size-1, for every r0 whose coordinate k is 0.
    for (std::size_t r0 = 0; r0 < total; ++r0) {
      if ((r0 / stride) % size != 0) continue;
      const auto at = [&](std::size_t i) { return all[r0 + i * stride]; };
      if (d.kind == "ring") {
        if (size == 2) {
          b.add_duplex(at(0), at(1), d.bandwidth, d.latency, cls);
        } else {
          for (std::size_t i = 0; i < size; ++i) {
            b.add_duplex(at(i), at((i + 1) % size), d.bandwidth, d.latency, cls);
          }
        }
      } else if (d.kind == "full-mesh") {
        for (std::size_t i = 0; i < size; ++i) {
          for (std::size_t j = i + 1; j < size; ++j) {
            b.add_duplex(at(i), at(j), d.bandwidth, d.latency, cls);
          }
        }
      } else {
        const NodeId sw =
            b.add_node(fmt::format("dim{}.switch{}", k, line_index), NodeKind::kSwitch);
        for (std::size_t i = 0; i < size; ++i) {
          b.add_duplex(at(i), sw, d.bandwidth, d.latency, cls);
        }
      }
      ++line_index;
    }
    stride *= size;
  }
  std::vector<NodeId> domain;
  for (std::uint32_t v = 0; v < b.num_nodes(); ++v)
    domain.emplace_back(v);
  b.add_group(GroupKind::kScaleUp, name, std::move(domain));
  return std::move(b).build();
}

std::vector<Dimension> read_dimensions(const ParamReader& p, bool torus) {
  std::vector<Dimension> dims;
  const config::Node list = p.at("dims");
  for (const config::Node& item : list.items()) {
    Dimension d;
    d.latency = p.time("latency");
    d.bandwidth = p.bandwidth("bandwidth");
    if (torus) {
      d.size = static_cast<int>(item.as_int(2, 4096));
    } else {
      item.allow_keys({"size", "topology", "bandwidth", "latency"});
      d.size = static_cast<int>(item.at("size").as_int(2, 4096));
      d.kind = item.at("topology").as_choice({"ring", "full-mesh", "switch"});
      if (auto bw = item.find("bandwidth")) d.bandwidth = bw->as_bandwidth();
      if (auto lat = item.find("latency")) d.latency = lat->as_time();
    }
    dims.push_back(d);
  }
  if (dims.empty() || dims.size() > 6) list.fail("a list of 1 to 6 dimensions");
  std::size_t total = 1;
  for (const Dimension& d : dims)
    total *= static_cast<std::size_t>(d.size);
  if (total > 1'000'000) list.fail("dimensions of at most 1,000,000 accelerators in all");
  return dims;
}

}  // namespace

void register_torus_builders(BuilderRegistry& registry) {
  registry.add(BuilderEntry{
      "torus",
      BuilderEntry::Category::kBuilder,
      "2D/3D torus of accelerators (a ring per dimension, wraparound links)",
      {{"dims", "[4, 4, 4]", "ring size per dimension"},
       {"bandwidth", "50GB/s", "per link, per direction (assumption)"},
       {"latency", "500ns", "per link (assumption)"}},
      [](const ParamReader& p) { return build_dimensions("torus", read_dimensions(p, true)); }});
  registry.add(BuilderEntry{
      "dimensions",
      BuilderEntry::Category::kBuilder,
      "ASTRA-sim-style per-dimension network: ring, full-mesh or switch in each dimension",
      {{"dims", "[{size: 8, topology: switch}, {size: 4, topology: ring}]",
        "list of {size, topology: ring|full-mesh|switch, bandwidth, latency}"},
       {"bandwidth", "50GB/s", "default link bandwidth, per direction (assumption)"},
       {"latency", "500ns", "default link latency (assumption)"}},
      [](const ParamReader& p) {
        return build_dimensions("dimensions", read_dimensions(p, false));
      }});
}

}  // namespace stepsim::topology
