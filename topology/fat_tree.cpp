#include "topology/fat_tree.hpp"

#include <fmt/format.h>
#include <cmath>

namespace stepsim::topology {
namespace {

// Ports facing down for a switch of `radix` ports with down:up ratio `o`.
int down_ports(int radix, double o) {
  return static_cast<int>(std::floor(radix * o / (1 + o) + 1e-9));
}

std::size_t ceil_div(std::size_t a, std::size_t b) {
  return (a + b - 1) / b;
}

// The fabric's dimensions, after the checks that it fits.
struct FatTreeShape {
  FatTreeSpec spec;  // tiers resolved ("auto" -> 2 or 3)
  int d1 = 0, u1 = 0, d2 = 0, u2 = 0;
  std::size_t leaves = 0;
  std::size_t pods = 1;
};

FatTreeShape shape_of(const FatTreeSpec& requested, std::size_t num_hosts, std::size_t n,
                      const ParamReader& where) {
  const std::size_t ports = num_hosts * n;
  if (ports == 0) where.fail("the fabric has no ports");
  FatTreeShape shape{.spec = requested};
  auto& [spec, d1, u1, d2, u2, leaves, pods] = shape;
  d1 = down_ports(spec.radix, spec.leaf_oversubscription);
  u1 = spec.radix - d1;
  if (d1 < 1 || u1 < 1) {
    where.fail(
        fmt::format("a radix-{} leaf with oversubscription {} has {} ports down and {} up; "
                    "both must be at least 1",
                    spec.radix, spec.leaf_oversubscription, d1, u1));
  }
  leaves = spec.rail_optimized ? ceil_div(num_hosts, static_cast<std::size_t>(d1)) * n
                               : ceil_div(ports, static_cast<std::size_t>(d1));
  const std::size_t radix = static_cast<std::size_t>(spec.radix);
  if (spec.tiers == 0) spec.tiers = leaves <= radix ? 2 : 3;  // "auto"
  if (spec.tiers == 2) {
    if (leaves > radix) {
      where.fail(fmt::format(
          "{} NICs need {} leaf switches, but 2 tiers of radix-{} switches connect at most {} "
          "leaves ({} NICs{}); use tiers: 3 or a larger radix",
          ports, leaves, spec.radix, radix, radix * static_cast<std::size_t>(d1),
          spec.rail_optimized ? fmt::format(", {} hosts of {} NICs rail-optimized",
                                            radix / n * static_cast<std::size_t>(d1), n)
                              : ""));
    }
  } else if (spec.tiers == 3) {
    d2 = down_ports(spec.radix, spec.spine_oversubscription);
    u2 = spec.radix - d2;
    if (d2 < 1 || u2 < 1) {
      where.fail(
          fmt::format("a radix-{} spine with oversubscription {} has {} ports down and {} up",
                      spec.radix, spec.spine_oversubscription, d2, u2));
    }
    pods = ceil_div(leaves, static_cast<std::size_t>(d2));
    if (pods > radix) {
      where.fail(fmt::format(
          "{} NICs need {} pods of {} leaves, but 3 tiers of radix-{} switches connect at most {} "
          "pods ({} NICs); use a larger radix",
          ports, pods, d2, spec.radix, radix, radix * static_cast<std::size_t>(d2 * d1)));
    }
  } else {
    where.fail(fmt::format("tiers must be 2 or 3, got {}", spec.tiers));
  }

  return shape;
}

// The leaf switches, each labelled with the span of NIC positions below it.
std::vector<NodeId> add_leaves(TopologyBuilder& b, const FatTreeShape& shape,
                               const NodeOptions& switch_options) {
  const std::uint32_t span1 = static_cast<std::uint32_t>(shape.d1);
  std::vector<NodeId> leaf(shape.leaves);
  for (std::size_t l = 0; l < shape.leaves; ++l) {
    leaf[l] = b.add_node(fmt::format("{}leaf{}", shape.spec.prefix, l), NodeKind::kSwitch,
                         switch_options);
    const auto lo = static_cast<std::uint32_t>(l) * span1;
    b.set_clos_label(leaf[l], ClosLabel{1, lo, lo + span1});
  }
  return leaf;
}

// Every host's NIC i to its leaf: the leaf of rail i when rail-optimized, else the NICs in order.
void attach_hosts(TopologyBuilder& b, const FatTreeShape& shape,
                  const std::vector<std::vector<NodeId>>& hosts, const std::vector<NodeId>& leaf,
                  std::uint16_t cls) {
  const std::size_t n = hosts.empty() ? 0 : hosts.front().size();
  const std::uint32_t span1 = static_cast<std::uint32_t>(shape.d1);
  for (std::size_t h = 0; h < hosts.size(); ++h) {
    for (std::size_t i = 0; i < n; ++i) {
      std::size_t l = 0;
      std::size_t port = 0;
      if (shape.spec.rail_optimized) {
        l = (h / span1) * n + i;
        port = h % span1;
      } else {
        l = (h * n + i) / span1;
        port = (h * n + i) % span1;
      }
      const NodeId nic = hosts[h][i];
      const auto position = static_cast<std::uint32_t>(l * span1 + port);
      b.set_clos_label(nic, ClosLabel{0, position, position + 1});
      b.add_duplex(nic, leaf[l], shape.spec.link_bandwidth, shape.spec.link_latency, cls);
    }
  }
}

// Two tiers: u1 spines, each linked to every leaf.
void add_spines(TopologyBuilder& b, const FatTreeShape& shape, const std::vector<NodeId>& leaf,
                std::uint16_t cls, const NodeOptions& switch_options, FabricSummary& summary) {
  const auto& spec = shape.spec;
  const auto top = static_cast<std::uint32_t>(shape.leaves) * static_cast<std::uint32_t>(shape.d1);
  for (int j = 0; j < shape.u1; ++j) {
    const NodeId spine =
        b.add_node(fmt::format("{}spine{}", spec.prefix, j), NodeKind::kSwitch, switch_options);
    b.set_clos_label(spine, ClosLabel{2, 0, top});
    for (std::size_t l = 0; l < shape.leaves; ++l) {
      b.add_duplex(leaf[l], spine, spec.link_bandwidth, spec.link_latency, cls);
    }
  }
  summary.tiers.push_back(FabricTier{"spine", static_cast<std::size_t>(shape.u1),
                                     shape.leaves * static_cast<std::size_t>(shape.u1), 0,
                                     spec.link_bandwidth, 0});
}

// Three tiers, first step: each pod's u1 spines, linked to the pod's d2 leaves and grouped with
// them. Returns the spines, pod by pod.
std::vector<NodeId> add_pods(TopologyBuilder& b, const FatTreeShape& shape,
                             const std::vector<NodeId>& leaf, std::uint16_t cls,
                             const NodeOptions& switch_options) {
  const auto& spec = shape.spec;
  const auto u1 = static_cast<std::size_t>(shape.u1);
  const auto d2 = static_cast<std::size_t>(shape.d2);
  const auto pod_span = static_cast<std::uint32_t>(shape.d2) * static_cast<std::uint32_t>(shape.d1);
  std::vector<NodeId> agg(shape.pods * u1);
  for (std::size_t p = 0; p < shape.pods; ++p) {
    std::vector<NodeId> members;
    for (int j = 0; j < shape.u1; ++j) {
      const NodeId a = b.add_node(fmt::format("{}pod{}.spine{}", spec.prefix, p, j),
                                  NodeKind::kSwitch, switch_options);
      agg[p * u1 + static_cast<std::size_t>(j)] = a;
      const auto lo = static_cast<std::uint32_t>(p) * pod_span;
      b.set_clos_label(a, ClosLabel{2, lo, lo + pod_span});
      members.push_back(a);
      for (std::size_t l = p * d2; l < std::min(shape.leaves, (p + 1) * d2); ++l) {
        b.add_duplex(leaf[l], a, spec.link_bandwidth, spec.link_latency, cls);
      }
    }
    for (std::size_t l = p * d2; l < std::min(shape.leaves, (p + 1) * d2); ++l) {
      members.push_back(leaf[l]);
    }
    b.add_group(GroupKind::kPod, fmt::format("{}pod{}", spec.prefix, p), std::move(members));
  }
  return agg;
}

// Three tiers, second step: u1 x u2 cores, core (j, c) linked to spine j of every pod.
void add_cores(TopologyBuilder& b, const FatTreeShape& shape, const std::vector<NodeId>& agg,
               std::uint16_t cls, const NodeOptions& switch_options) {
  const auto& spec = shape.spec;
  const auto pod_span = static_cast<std::uint32_t>(shape.d2) * static_cast<std::uint32_t>(shape.d1);
  const auto top = static_cast<std::uint32_t>(shape.pods) * pod_span;
  for (int j = 0; j < shape.u1; ++j) {
    for (int c = 0; c < shape.u2; ++c) {
      const NodeId core = b.add_node(fmt::format("{}core{}", spec.prefix, j * shape.u2 + c),
                                     NodeKind::kSwitch, switch_options);
      b.set_clos_label(core, ClosLabel{3, 0, top});
      for (std::size_t p = 0; p < shape.pods; ++p) {
        b.add_duplex(agg[p * static_cast<std::size_t>(shape.u1) + static_cast<std::size_t>(j)],
                     core, spec.link_bandwidth, spec.link_latency, cls);
      }
    }
  }
}

// The spine and core tiers of a 3-tier fabric in `summary`; returns the bisection bound of the
// pods' uplinks.
double summarize_three_tiers(const FatTreeShape& shape, FabricSummary& summary, double bisection) {
  const auto& spec = shape.spec;
  const double s = spec.link_bandwidth.value();
  const std::size_t aggs = shape.pods * static_cast<std::size_t>(shape.u1);
  summary.tiers.push_back(FabricTier{"spine", aggs,
                                     shape.leaves * static_cast<std::size_t>(shape.u1),
                                     aggs * static_cast<std::size_t>(shape.u2), spec.link_bandwidth,
                                     static_cast<double>(shape.d2) / shape.u2});
  summary.tiers.push_back(FabricTier{"core", static_cast<std::size_t>(shape.u1 * shape.u2),
                                     aggs * static_cast<std::size_t>(shape.u2), 0,
                                     spec.link_bandwidth, 0});
  if (shape.pods >= 2)
    bisection = std::min(bisection, static_cast<double>(aggs * shape.u2) * s / 2);
  return bisection;
}

}  // namespace

void check_fat_tree(const FatTreeSpec& spec, std::size_t hosts, std::size_t nics_per_host,
                    const ParamReader& where) {
  (void)shape_of(spec, hosts, nics_per_host, where);
}

void add_fat_tree(TopologyBuilder& b, const FatTreeSpec& requested,
                  const std::vector<std::vector<NodeId>>& hosts, const ParamReader& where) {
  const std::size_t n = hosts.empty() ? 0 : hosts.front().size();
  const std::size_t num_hosts = hosts.size();
  const std::size_t ports = num_hosts * n;
  const FatTreeShape shape = shape_of(requested, num_hosts, n, where);
  const FatTreeSpec& spec = shape.spec;
  const std::uint16_t cls = b.link_class(spec.link_class);
  const NodeOptions switch_options{spec.in_network_reduction, std::nullopt, NodeId()};
  const std::vector<NodeId> leaf = add_leaves(b, shape, switch_options);
  attach_hosts(b, shape, hosts, leaf, cls);

  FabricSummary summary;
  summary.name = spec.name;
  summary.ports = ports;
  summary.port_bandwidth = spec.link_bandwidth;
  const double s = spec.link_bandwidth.value();
  const std::size_t leaves = shape.leaves;
  summary.tiers.push_back(
      FabricTier{"leaf", leaves, ports, leaves * static_cast<std::size_t>(shape.u1),
                 spec.link_bandwidth, static_cast<double>(shape.d1) / shape.u1});
  double bisection = static_cast<double>(ports) / 2 * s;
  if (leaves >= 2) bisection = std::min(bisection, static_cast<double>(leaves * shape.u1) * s / 2);

  if (spec.tiers == 2) {
    add_spines(b, shape, leaf, cls, switch_options, summary);
  } else {
    const std::vector<NodeId> agg = add_pods(b, shape, leaf, cls, switch_options);
    add_cores(b, shape, agg, cls, switch_options);
    bisection = summarize_three_tiers(shape, summary, bisection);
  }
  summary.bisection = BytesPerSecond(bisection);
  summary.bisection_method =
      spec.tiers == 2
          ? "closed form: min(ports/2 x port speed, leaves x uplinks x link speed / 2), for a "
            "split of the hosts aligned with the leaves"
          : "closed form: min(ports/2 x port speed, leaves x uplinks x link speed / 2, pods x "
            "pod uplinks x link speed / 2), for a split aligned with leaves and pods";
  b.add_fabric(std::move(summary));
}

std::vector<ParamSpec> fat_tree_param_specs(const std::string& tiers, const std::string& radix,
                                            const std::string& nic_speed, const std::string& rail,
                                            const std::string& latency, const std::string& sharp) {
  return {
      {"tiers", tiers,
       "switch tiers: 2 (leaf-spine), 3 (leaf-spine-core) or auto (2 when they fit)"},
      {"radix", radix, "ports per switch"},
      {"nic_speed", nic_speed, "NIC and switch link speed, per direction"},
      {"rail_optimized", rail, "NIC i of every host goes to the leaf of rail i"},
      {"oversubscription", "1",
       "down:up port ratio of the leaves, or a list [leaf, spine] (1 = non-blocking)"},
      {"switch_latency", latency, "latency of each fabric link, switch traversal included"},
      {"sharp", sharp,
       "switches reduce in the network (InfiniBand SHARP) and NCCL uses them (CollNet: "
       "NCCL_COLLNET_ENABLE=1 with the SHARP plugin)"},
  };
}

FatTreeSpec read_fat_tree_spec(const ParamReader& p) {
  FatTreeSpec spec;
  const config::Node tiers = p.at("tiers");
  spec.tiers =
      tiers.is_scalar() && tiers.as_string() == "auto" ? 0 : static_cast<int>(tiers.as_int(2, 3));
  spec.radix = static_cast<int>(p.integer("radix", 2, 4096));
  spec.link_bandwidth = p.bandwidth("nic_speed");
  spec.link_latency = p.time("switch_latency");
  spec.rail_optimized = p.boolean("rail_optimized");
  spec.in_network_reduction = p.boolean("sharp");
  const config::Node o = p.at("oversubscription");
  if (o.is_sequence()) {
    const auto items = o.items();
    if (items.empty() || items.size() > 2)
      o.fail("one or two oversubscription ratios [leaf, spine]");
    spec.leaf_oversubscription = items[0].as_double(1, 1024);
    if (items.size() == 2) spec.spine_oversubscription = items[1].as_double(1, 1024);
  } else {
    spec.leaf_oversubscription = o.as_double(1, 1024);
  }
  return spec;
}

void register_fat_tree_builders(BuilderRegistry& registry) {
  std::vector<ParamSpec> params =
      fat_tree_param_specs("2", "64", "400Gbps", "false", "130ns", "false");
  params.push_back({"hosts", "32", "hosts; each has nics_per_host accelerators with one NIC each"});
  params.push_back({"nics_per_host", "1", "accelerators (and NICs) per host"});
  // PCIe 5.0 x16: 32 GT/s x 16 lanes, 128b/130b encoding = 63 GB/s per direction (PCI-SIG).
  params.push_back({"pcie_bandwidth", "63GB/s", "accelerator-to-NIC link, per direction"});
  params.push_back({"pcie_latency", "500ns", "accelerator-to-NIC latency (assumption)"});
  registry.add(BuilderEntry{
      "fat-tree", BuilderEntry::Category::kBuilder,
      "2- or 3-tier fat-tree of hosts with NICs (rail-optimized or not, oversubscribed per tier)",
      params, [](const ParamReader& p) {
        const FatTreeSpec spec = read_fat_tree_spec(p);
        const auto num_hosts = static_cast<std::size_t>(p.integer("hosts", 1, 10'000'000));
        const auto nics = static_cast<std::size_t>(p.integer("nics_per_host", 1, 1024));
        const BytesPerSecond pcie = p.bandwidth("pcie_bandwidth");
        const Time pcie_latency = p.time("pcie_latency");
        check_fat_tree(spec, num_hosts, nics, p);  // before building the hosts
        TopologyBuilder b("fat-tree");
        const std::uint16_t pcie_class = b.link_class("pcie");
        std::vector<std::vector<NodeId>> hosts(num_hosts);
        for (std::size_t h = 0; h < num_hosts; ++h) {
          std::vector<NodeId> members;
          for (std::size_t i = 0; i < nics; ++i) {
            const NodeId gpu =
                b.add_node(fmt::format("host{}.gpu{}", h, i), NodeKind::kAccelerator);
            const NodeId nic = b.add_node(fmt::format("host{}.nic{}", h, i), NodeKind::kNic,
                                          NodeOptions{false, std::nullopt, gpu});
            b.add_duplex(gpu, nic, pcie, pcie_latency, pcie_class);
            hosts[h].push_back(nic);
            members.push_back(gpu);
            members.push_back(nic);
          }
          b.add_group(GroupKind::kNode, fmt::format("host{}", h), std::move(members));
        }
        add_fat_tree(b, spec, hosts, p);
        return std::move(b).build();
      }});
}

}  // namespace stepsim::topology
