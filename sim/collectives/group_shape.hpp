// What an algorithm may know about a communicator group without seeing the topology: how many
// members, which scale-up domain (NVLink node, UB supernode) each member sits in, and whether a
// switch that reduces in the network (NVLS, SHARP) spans the whole group.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace stepsim::collectives {

struct GroupShape {
  std::uint32_t size = 0;
  // Scale-up domain of each member, numbered densely from 0 in order of first appearance. Empty
  // means one domain for all.
  std::vector<std::uint32_t> domain;
  bool in_switch_reduction = false;

  static GroupShape single_domain(std::uint32_t members, bool in_switch = false);
  // `domains` domains of `per_domain` consecutive members each.
  static GroupShape uniform(std::uint32_t domains, std::uint32_t per_domain,
                            bool in_switch = false);

  std::uint32_t num_domains() const;
  // Members of each domain, in member order.
  std::vector<std::vector<std::uint32_t>> domain_members() const;
  // When every domain has the same number of members, that number; nullopt otherwise.
  std::optional<std::uint32_t> uniform_domain_size() const;
};

}  // namespace stepsim::collectives
