// Helpers shared by the topology tests.
#pragma once

#include <string>

#include "sim/common/config.hpp"
#include "topology/load_topology.hpp"

namespace stepsim::topology::testing {

// Loads a topology from a preset spec ("dgx-h100-superpod:nodes=4").
inline Topology preset(const std::string& spec) {
  return load_topology_spec(spec, ".");
}

// Loads a topology from inline YAML text.
inline Topology from_yaml(const std::string& text) {
  const config::Document doc = config::Document::parse(text, "test.yaml");
  return load_topology(doc.root());
}

// Sum of the bandwidth of links of class `cls` leaving `node`.
inline double egress(const Topology& t, NodeId node, const std::string& cls) {
  double sum = 0;
  const auto range = t.out_links(node);
  for (std::uint32_t i = range.first; i < range.first + range.count; ++i) {
    if (t.link_class(LinkIndex(i)).name == cls) sum += t.bandwidth(LinkIndex(i)).value();
  }
  return sum;
}

}  // namespace stepsim::topology::testing
