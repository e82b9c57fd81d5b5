// Folded-Clos ("fat-tree") scale-out fabrics of InfiniBand or Ethernet switches, 2 or 3 tiers.
//
// Structure, for switches of `radix` ports and oversubscription o (down:up port ratio) per tier:
//  - a leaf uses d1 = floor(radix * o1 / (1 + o1)) ports down (to NICs) and u1 = radix - d1 up;
//  - 2 tiers: u1 spines; every leaf has one link to every spine (at most `radix` leaves);
//  - 3 tiers: pods of d2 = floor(radix * o2 / (1 + o2)) leaves and u1 aggregation switches (one
//    link from every leaf of the pod to every aggregation switch); u1 x u2 core switches, core
//    (j, c) linked to aggregation switch j of every pod (at most `radix` pods), u2 = radix - d2.
//    With radix k and no oversubscription this is the k-ary fat-tree: k^3/4 ports.
//  - rail-optimized: hosts are taken in blocks of d1 ("scalable units"); NIC i of every host of a
//    block goes to the block's leaf i (rail i). Otherwise NICs fill leaves in host order.
// Every link (NIC-leaf and switch-switch) has the same bandwidth and latency, duplex. Switches
// get Clos labels, so the router finds routes without search.
#pragma once

#include <string>
#include <vector>

#include "topology/builder_registry.hpp"
#include "topology/topology_builder.hpp"

namespace stepsim::topology {

struct FatTreeSpec {
  int tiers = 2;
  int radix = 64;
  BytesPerSecond link_bandwidth;  // per direction: NIC speed and switch-to-switch links
  Time link_latency;              // per link (entering the next device)
  bool rail_optimized = false;
  double leaf_oversubscription = 1;   // o1 >= 1
  double spine_oversubscription = 1;  // o2 >= 1 (3 tiers only)
  std::string link_class = "ib";
  bool in_network_reduction = false;  // SHARP
  std::string prefix;                 // prepended to switch names
  std::string name = "scale-out";
};

// Adds the fabric's switches and links above `hosts` (each host's NIC nodes; every host has the
// same number of NICs), labels it for routing and records its FabricSummary. Parameters that
// cannot fit (too many ports for the radix and tiers) are reported through `where`.
void add_fat_tree(TopologyBuilder& builder, const FatTreeSpec& spec,
                  const std::vector<std::vector<NodeId>>& hosts, const ParamReader& where);

// The checks add_fat_tree makes before it builds anything: that `hosts` hosts of `nics_per_host`
// NICs each fit the radix and tiers (reported through `where` otherwise). For builders that would
// otherwise build every host of a fabric that cannot be built.
void check_fat_tree(const FatTreeSpec& spec, std::size_t hosts, std::size_t nics_per_host,
                    const ParamReader& where);

// Reads the fabric parameters shared by the fat-tree builder and the cluster presets: tiers,
// radix, nic_speed, rail_optimized, oversubscription (one number for the leaves, or a list
// [leaf, spine]), switch_latency, sharp.
FatTreeSpec read_fat_tree_spec(const ParamReader& params);
// The schema entries read_fat_tree_spec reads, with the given defaults.
std::vector<ParamSpec> fat_tree_param_specs(const std::string& tiers, const std::string& radix,
                                            const std::string& nic_speed, const std::string& rail,
                                            const std::string& latency, const std::string& sharp);

}  // namespace stepsim::topology
