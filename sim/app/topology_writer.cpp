#include "sim/app/topology_writer.hpp"

#include <fmt/format.h>
#include <ostream>

namespace stepsim::app {
namespace {

using namespace stepsim::topology;

struct TierRow {
  std::string fabric;
  std::string tier;
  std::size_t switches;
  double oversubscription;
  double up_per_port;  // nominal uplink bytes/s per port below (0 at the top tier)
};

std::vector<TierRow> tier_rows(const Topology& t) {
  std::vector<TierRow> rows;
  for (const FabricSummary& f : t.fabrics()) {
    // Nominal uplink bandwidth per port: the port speed divided by the oversubscription of this
    // tier and every tier below it.
    double per_port = f.port_bandwidth.value();
    for (const FabricTier& tier : f.tiers) {
      if (tier.oversubscription > 0) per_port /= tier.oversubscription;
      rows.push_back({f.name, tier.name, tier.switches, tier.oversubscription,
                      tier.oversubscription > 0 ? per_port : 0});
    }
  }
  return rows;
}

nlohmann::json describe_json(const Topology& t, const Analysis& a,
                             const std::vector<collectives::ReachCheck>& reach) {
  nlohmann::json j;
  j["name"] = t.name();
  j["nodes"] = t.num_nodes();
  j["links"] = a.links;
  j["accelerators"] = t.accelerators().size();
  nlohmann::json counts = nlohmann::json::object();
  for (const auto& [kind, n] : a.counts)
    counts[std::string(to_string(kind))] = n;
  j["counts"] = counts;
  nlohmann::json per = nlohmann::json::array();
  for (const ClassBandwidth& c : a.per_accelerator) {
    per.push_back({{"class", c.link_class},
                   {"min_bytes_per_second", c.min.value()},
                   {"max_bytes_per_second", c.max.value()}});
  }
  j["per_accelerator_bandwidth"] = per;
  nlohmann::json fabrics = nlohmann::json::array();
  for (const FabricSummary& f : t.fabrics()) {
    nlohmann::json tiers = nlohmann::json::array();
    const std::vector<TierRow> rows = tier_rows(t);
    std::size_t row = 0;
    while (rows[row].fabric != f.name)
      ++row;
    for (const FabricTier& tier : f.tiers) {
      const double up_per_port = rows[row++].up_per_port;
      tiers.push_back({{"tier", tier.name},
                       {"switches", tier.switches},
                       {"down_links", tier.down_links},
                       {"up_links", tier.up_links},
                       {"link_bytes_per_second", tier.link_bandwidth.value()},
                       {"oversubscription", tier.oversubscription},
                       {"up_bytes_per_second_per_port", up_per_port}});
    }
    fabrics.push_back({{"name", f.name},
                       {"ports", f.ports},
                       {"port_bytes_per_second", f.port_bandwidth.value()},
                       {"tiers", tiers},
                       {"bisection_bytes_per_second", f.bisection.value()},
                       {"bisection_method", f.bisection_method}});
  }
  j["fabrics"] = fabrics;
  j["bisection"] = {{"computed", a.bisection.computed},
                    {"bytes_per_second", a.bisection.bandwidth.value()},
                    {"method", a.bisection.method}};
  j["diameter"] = {
      {"hops", a.diameter.hops}, {"sources", a.diameter.sources}, {"exact", a.diameter.exact}};
  nlohmann::json classes = nlohmann::json::array();
  for (const LinkClass& c : t.link_classes()) {
    classes.push_back({{"name", c.name},
                       {"efficiency", c.efficiency.value_or(1.0)},
                       {"multipath", std::string(to_string(c.multipath))}});
  }
  j["link_classes"] = classes;
  j["collective_library"] = std::string(to_string(t.collective_library()));
  nlohmann::json checks = nlohmann::json::array();
  for (const collectives::ReachCheck& c : reach) {
    checks.push_back({{"tier", c.tier},
                      {"ranks", c.ranks},
                      {"per_accelerator_bytes_per_second", c.per_accelerator.value()},
                      {"allreduce_busbw_bytes_per_second", c.allreduce_busbw.value()},
                      {"alltoall_busbw_bytes_per_second", c.alltoall_busbw.value()},
                      {"reachable", c.reachable()}});
  }
  j["reachable"] = checks;
  return j;
}

void write_text(std::ostream& out, const Topology& t, const Analysis& a,
                const std::vector<collectives::ReachCheck>& reach) {
  out << fmt::format("topology {}: {} nodes, {} links\n", t.name(), t.num_nodes(), a.links);
  for (const auto& [kind, n] : a.counts) {
    if (n > 0) out << fmt::format("  {:<12} {:>9}\n", to_string(kind), n);
  }
  out << "per-accelerator bandwidth (one direction, line rate):\n";
  for (const ClassBandwidth& c : a.per_accelerator) {
    out << fmt::format("  {:<12} {}{}\n", c.link_class, format_bandwidth(c.max),
                       c.min == c.max ? "" : fmt::format(" (min {})", format_bandwidth(c.min)));
  }
  std::vector<std::string> spraying;
  for (const LinkClass& c : t.link_classes())
    if (c.multipath == Multipath::kSpray) spraying.push_back(c.name);
  out << fmt::format("multipath: {} spray, the others hash\n",
                     spraying.empty() ? "no class" : fmt::format("{}", fmt::join(spraying, ", ")));
  out << fmt::format("collectives: {}\n",
                     t.collective_library() == CollectiveLibrary::kNccl
                         ? "NCCL (its protocols and tuner)"
                         : "HCCL (stepsim's own algorithm rules, no NCCL protocol)");
  if (!reach.empty()) {
    out << "reachable with the defaults (1 GiB, algorithm auto, calibrated links, ECMP as the "
           "fabric says):\n";
  }
  for (const collectives::ReachCheck& c : reach) {
    out << fmt::format(
        "  {:<9} {:>3} ranks: allreduce busbw {}, alltoall busbw {}, of {} per "
        "accelerator{}\n",
        c.tier, c.ranks, format_bandwidth(c.allreduce_busbw), format_bandwidth(c.alltoall_busbw),
        format_bandwidth(c.per_accelerator),
        c.reachable() ? ""
                      : "  -- less than half: the defaults do not use the "
                        "fabric (see docs/topology.md, \"Routing\")");
  }
  for (const FabricSummary& f : t.fabrics()) {
    out << fmt::format("fabric {}: {} ports of {}\n", f.name, f.ports,
                       format_bandwidth(f.port_bandwidth));
    for (const TierRow& row : tier_rows(t)) {
      if (row.fabric != f.name) continue;
      out << fmt::format("  {:<6} {:>7} switches", row.tier, row.switches);
      if (row.oversubscription > 0) {
        out << fmt::format(", oversubscription {:.3g}:1, uplink {} per port", row.oversubscription,
                           format_bandwidth(BytesPerSecond(row.up_per_port)));
      }
      out << "\n";
    }
    out << fmt::format("  bisection {} ({})\n", format_bandwidth(f.bisection), f.bisection_method);
  }
  if (a.bisection.computed) {
    out << fmt::format("bisection bandwidth: {} ({})\n", format_bandwidth(a.bisection.bandwidth),
                       a.bisection.method);
  } else {
    out << fmt::format("bisection bandwidth: {}\n", a.bisection.method);
  }
  out << fmt::format("diameter: {} hops between accelerators ({})\n", a.diameter.hops,
                     a.diameter.exact
                         ? "exact"
                         : fmt::format("from {} evenly spaced accelerators", a.diameter.sources));
}

}  // namespace

nlohmann::json topology_json(const TopologyDescription& d) {
  return describe_json(d.topology, d.analysis, d.reach);
}

void write_topology_text(std::ostream& out, const TopologyDescription& d) {
  write_text(out, d.topology, d.analysis, d.reach);
}

}  // namespace stepsim::app
