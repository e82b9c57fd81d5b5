// What an algorithm may know about a communicator group without seeing the topology: how many
// members, which scale-up domain (NVLink node, UB supernode) each member sits in, which rail its
// NIC is on, whether a switch that reduces in the network (NVLS, SHARP) spans the whole group, and
// whether the members form a full mesh of direct links (UB-Mesh's nD-FullMesh).
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/common/units.hpp"

namespace stepsim::collectives {

// A group laid out as a d-dimensional grid of sizes[0] x ... x sizes[d-1] members in which every
// line (the members that differ in one coordinate only) is a clique of direct links between the
// accelerators, one link per ordered pair: a full mesh per dimension (arXiv 2503.20377's
// nD-FullMesh; a single clique is d = 1). Every size is at least 2 (dimensions of size 1 are
// left out) and the members are exactly the grid's points, one each.
struct MeshShape {
  std::vector<std::uint32_t> sizes;
  // Per dimension: the bandwidth of one of its links, per direction (line rate times the link
  // class's efficiency), for weighing the dimensions against each other.
  std::vector<BytesPerSecond> bandwidth;
  // Member i's coordinate in dimension k is coordinates[i * dimensions() + k], in [0, sizes[k]).
  std::vector<std::uint32_t> coordinates;

  std::size_t dimensions() const { return sizes.size(); }
  std::uint32_t coordinate(std::uint32_t member, std::size_t dimension) const {
    return coordinates[member * dimensions() + dimension];
  }
  // The members of each line of `dimension`, each in coordinate order (line[c] has coordinate c
  // in `dimension`), lines in grid order (dimension 0 varying fastest).
  std::vector<std::vector<std::uint32_t>> lines(std::size_t dimension) const;

  bool operator==(const MeshShape&) const = default;
};

// InfiniBand SHARP for a group: one reduction tree per rail in the scale-out fabric, joining the
// NICs of the group's members on that rail through switches that all reduce (NCCL's CollNet runs
// one SHARP tree per NIC). The tree's switches are numbered 0..k-1 over all rails
// (Endpoint::network_switch); a rail's switches are its own even where two rails' trees meet in
// the same physical switch, so that each tree stays a tree.
struct NetworkTree {
  static constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();
  // Per member: the tree switch its NIC attaches to (its leaf).
  std::vector<std::uint32_t> member_switch;
  // Per tree switch: its parent towards the rail's root; kNone for a root.
  std::vector<std::uint32_t> switch_parent;
  std::size_t switches() const { return switch_parent.size(); }

  bool operator==(const NetworkTree&) const = default;
};

struct GroupShape {
  std::uint32_t size = 0;
  // Scale-up domain of each member, numbered densely from 0 in order of first appearance. Empty
  // means one domain for all.
  std::vector<std::uint32_t> domain;
  bool in_switch_reduction = false;
  // Rail of each member's NIC: the member's position among the accelerators of its scale-up
  // domain, when it has exactly one NIC (GPU k of a DGX node uses NIC k, on rail k of a
  // rail-optimized fabric); kNoRail when it has none or several. Empty: no rails known.
  static constexpr std::uint32_t kNoRail = std::numeric_limits<std::uint32_t>::max();
  std::vector<std::uint32_t> rail;
  // Set when the members form a full mesh of direct links (placement.hpp says how it is found).
  std::optional<MeshShape> mesh;
  // What NCCL's tuner takes as its bandwidths (nccl_tuner.hpp), for the first member, one
  // direction, line rate x class efficiency: its links into its scale-up domain, and its NICs'
  // links to the fabric (zero when it has none). Only the tuner reads them; the flow network
  // carries the real (calibrated) rates.
  BytesPerSecond scale_up_bandwidth;
  BytesPerSecond scale_out_bandwidth;
  // Every domain of the group has a switch that reduces (NVLS): NVLS-tree across domains.
  bool domain_in_switch = false;
  // The scale-out fabric's switches reduce (InfiniBand SHARP): CollNet across domains.
  bool network_reduction = false;
  // The SHARP trees of the group's rails, when the group spans several domains, each member has
  // one NIC and every switch that joins a rail's NICs reduces; nullopt otherwise.
  std::optional<NetworkTree> network_tree;
  // NCCL runs the group's collectives (the topology's collective library): its protocols and
  // tuner apply. False under HCCL, whose collectives keep stepsim's own rules.
  bool nccl = true;

  static GroupShape single_domain(std::uint32_t members, bool in_switch = false);
  // `domains` domains of `per_domain` consecutive members each.
  static GroupShape uniform(std::uint32_t domains, std::uint32_t per_domain,
                            bool in_switch = false);

  std::uint32_t num_domains() const;
  // Members of each domain, in member order.
  std::vector<std::vector<std::uint32_t>> domain_members() const;
  // When every domain has the same number of members, that number; nullopt otherwise.
  std::optional<std::uint32_t> uniform_domain_size() const;

  // Equal shapes get equal plans (a plan depends on the group's shape, not on where it is).
  bool operator==(const GroupShape&) const = default;
};

// The member that relays a point-to-point transfer from `from` to `to` the way NCCL's PXN does
// (NCCL 2.12 and later): when the two sit in different domains on different rails, the member of
// `from`'s domain on `to`'s rail (the lowest-numbered one), so that the data crosses the scale-up
// network first and leaves through a NIC on the receiver's rail. nullopt when there is no such
// member or no need for one. Built once per group: each lookup is a hash probe.
class PxnRelays {
 public:
  explicit PxnRelays(const GroupShape& group);
  std::optional<std::uint32_t> operator()(std::uint32_t from, std::uint32_t to) const;

 private:
  const GroupShape& group_;
  std::unordered_map<std::uint64_t, std::uint32_t> on_rail_;  // (domain, rail) -> first member
};

}  // namespace stepsim::collectives
