// UB-Mesh (Liao et al., "UB-Mesh: a Hierarchically Localized nD-FullMesh Datacenter Network
// Architecture", arXiv 2503.20377): NPUs joined by direct links in full meshes, one dimension at a
// time (nD-FullMesh).
//  - ub-mesh-rack: the rack's 64 NPUs as an 8 x 8 2D full mesh: every NPU has a direct link to
//    the 7 others of its row (X) and the 7 others of its column (Y).
//  - ub-mesh-pod: 4 x 4 racks (1,024 NPUs) in a 2D full mesh of racks along rack rows and
//    columns. Simplification (documented): the inter-rack links join NPU (x, y) of a rack to NPU
//    (x, y) of every other rack of the same rack row and rack column (a 4D full mesh); the paper
//    aggregates these through the rack's low-radix switches, which adds no bandwidth limit when
//    they are non-blocking.
// Link widths differ per dimension in the paper and are parameters here; the defaults (28 GB/s per
// direction per link, 200 ns per hop) are assumptions, not figures from the paper. NPUs forward
// traffic (direct network), and the whole mesh is one scale-up domain.
#include <fmt/format.h>
#include <array>

#include "topology/builder_registry.hpp"
#include "topology/topology_builder.hpp"

namespace stepsim::topology {
namespace {

struct MeshSpec {
  int x = 8;
  int y = 8;
  int rack_rows = 1;
  int rack_columns = 1;
  std::array<BytesPerSecond, 4> bandwidth;  // X, Y, rack row, rack column
  Time latency;
};

Topology build_mesh(const std::string& name, const MeshSpec& s) {
  TopologyBuilder b(name);
  b.set_collective_library(CollectiveLibrary::kHccl);  // Ascend NPUs run HCCL, not NCCL
  const std::array<std::uint16_t, 4> cls = {b.link_class("ub-x"), b.link_class("ub-y"),
                                            b.link_class("ub-rack-row"),
                                            b.link_class("ub-rack-column")};
  // UB-Mesh's All-Path Routing (APR, in the paper) spreads a transfer over several paths of the
  // mesh at once rather than hashing it onto one: sprayed here over the shortest paths (APR's
  // longer detours are not modeled; the collectives use every link directly instead).
  for (const std::uint16_t c : cls)
    b.set_multipath(c, Multipath::kSpray);
  const bool pod = s.rack_rows * s.rack_columns > 1;
  const auto id = [&](int rr, int rc, int x, int y) {
    return NodeId(static_cast<std::uint32_t>(((rr * s.rack_columns + rc) * s.x + x) * s.y + y));
  };
  std::vector<NodeId> all;
  for (int rr = 0; rr < s.rack_rows; ++rr) {
    for (int rc = 0; rc < s.rack_columns; ++rc) {
      const std::string rack = pod ? fmt::format("rack{}.{}.", rr, rc) : "";
      std::vector<NodeId> members;
      for (int x = 0; x < s.x; ++x) {
        for (int y = 0; y < s.y; ++y) {
          members.push_back(b.add_node(fmt::format("{}npu{}.{}", rack, x, y),
                                       NodeKind::kAccelerator, NodeOptions{false, true, NodeId()}));
        }
      }
      all.insert(all.end(), members.begin(), members.end());
      if (pod) b.add_group(GroupKind::kRack, fmt::format("rack{}.{}", rr, rc), std::move(members));
    }
  }
  // One duplex link per pair in each dimension (a < b avoids doubles).
  for (int rr = 0; rr < s.rack_rows; ++rr) {
    for (int rc = 0; rc < s.rack_columns; ++rc) {
      for (int x = 0; x < s.x; ++x) {
        for (int y = 0; y < s.y; ++y) {
          const NodeId me = id(rr, rc, x, y);
          for (int x2 = x + 1; x2 < s.x; ++x2) {
            b.add_duplex(me, id(rr, rc, x2, y), s.bandwidth[0], s.latency, cls[0]);
          }
          for (int y2 = y + 1; y2 < s.y; ++y2) {
            b.add_duplex(me, id(rr, rc, x, y2), s.bandwidth[1], s.latency, cls[1]);
          }
          for (int rc2 = rc + 1; rc2 < s.rack_columns; ++rc2) {
            b.add_duplex(me, id(rr, rc2, x, y), s.bandwidth[2], s.latency, cls[2]);
          }
          for (int rr2 = rr + 1; rr2 < s.rack_rows; ++rr2) {
            b.add_duplex(me, id(rr2, rc, x, y), s.bandwidth[3], s.latency, cls[3]);
          }
        }
      }
    }
  }
  b.add_group(GroupKind::kScaleUp, pod ? "pod" : "rack", std::move(all));
  return std::move(b).build();
}

std::vector<ParamSpec> mesh_params(bool pod) {
  std::vector<ParamSpec> p = {
      {"x", "8", "NPUs per rack row (X full mesh)"},
      {"y", "8", "NPUs per rack column (Y full mesh)"},
      {"x_bandwidth", "28GB/s", "X link, per direction (assumption)"},
      {"y_bandwidth", "28GB/s", "Y link, per direction (assumption)"},
      {"latency", "200ns", "per link (assumption)"},
  };
  if (pod) {
    p.push_back({"rack_rows", "4", "racks per pod column"});
    p.push_back({"rack_columns", "4", "racks per pod row"});
    p.push_back({"rack_row_bandwidth", "28GB/s", "inter-rack link along a rack row (assumption)"});
    p.push_back(
        {"rack_column_bandwidth", "28GB/s", "inter-rack link along a rack column (assumption)"});
  }
  return p;
}

MeshSpec read_mesh(const ParamReader& p, bool pod) {
  MeshSpec s;
  s.x = static_cast<int>(p.integer("x", 1, 64));
  s.y = static_cast<int>(p.integer("y", 1, 64));
  s.bandwidth[0] = p.bandwidth("x_bandwidth");
  s.bandwidth[1] = p.bandwidth("y_bandwidth");
  s.latency = p.time("latency");
  if (pod) {
    s.rack_rows = static_cast<int>(p.integer("rack_rows", 1, 64));
    s.rack_columns = static_cast<int>(p.integer("rack_columns", 1, 64));
    s.bandwidth[2] = p.bandwidth("rack_row_bandwidth");
    s.bandwidth[3] = p.bandwidth("rack_column_bandwidth");
  }
  if (s.x * s.y * s.rack_rows * s.rack_columns < 2) p.fail("the mesh needs at least 2 NPUs");
  return s;
}

}  // namespace

void register_ub_mesh_presets(BuilderRegistry& registry) {
  registry.add(BuilderEntry{
      "ub-mesh-rack", BuilderEntry::Category::kPreset,
      "UB-Mesh rack: 64 NPUs in an 8x8 2D full mesh (arXiv 2503.20377)", mesh_params(false),
      [](const ParamReader& p) { return build_mesh("ub-mesh-rack", read_mesh(p, false)); }});
  registry.add(BuilderEntry{
      "ub-mesh-pod", BuilderEntry::Category::kPreset,
      "UB-Mesh pod: 4x4 racks of 8x8 NPUs, full meshes across rack rows and columns (4D full mesh)",
      mesh_params(true),
      [](const ParamReader& p) { return build_mesh("ub-mesh-pod", read_mesh(p, true)); }});
}

}  // namespace stepsim::topology
