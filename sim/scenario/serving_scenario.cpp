#include "sim/scenario/serving_scenario.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

#include <fmt/format.h>

#include "sim/scenario/scenario.hpp"
#include "topology/load_topology.hpp"

namespace stepsim {

ServingScenario load_serving_scenario(const std::filesystem::path& file,
                                      const std::vector<std::string>& overrides) {
  ServingScenario scenario =
      load_serving_scenario(config::Document::load_file(file), file.stem().string(), overrides);
  scenario.file = file;
  return scenario;
}

ServingScenario load_serving_scenario(config::Document document, const std::string& default_name,
                                      const std::vector<std::string>& overrides) {
  for (const auto& o : overrides)
    document.apply_override(o);
  const config::Node root = document.root();
  if (root.is_null())
    root.fail_with("the scenario is empty; it needs 'topology', 'model', 'compute' and 'serving'");
  if (!root.is_map()) root.fail("a map with the keys topology, model, compute, serving");
  if (!root.has("serving") && (root.has("parallelism") || root.has("training"))) {
    root.fail_with(
        "this is a training scenario (it has 'parallelism' or 'training'): run it with "
        "'stepsim run'; 'stepsim serve' needs a 'serving' section (docs/serving.md)");
  }
  root.allow_keys({"name", "description", "topology", "model", "compute", "network", "serving"});
  const config::Node topology_node = root.at("topology");
  std::string name = default_name;
  std::string description;
  if (auto n = root.find("name")) name = n->as_string();
  if (auto n = root.find("description")) description = n->as_string();

  workloads::ServingSpec serving = workloads::parse_serving(root);
  const auto network_node = root.find("network");
  collectives::NetworkOptions network =
      parse_network_options(network_node ? &*network_node : nullptr);
  topology::Topology topology = topology::load_topology(topology_node);
  // Each node's accelerators (indices), nodes in the topology's group order, for `nodes:`.
  std::vector<std::vector<std::uint32_t>> node_accelerators;
  for (const topology::Group& group : topology.groups()) {
    if (group.kind != topology::GroupKind::kNode) continue;
    std::vector<std::uint32_t> on_node;
    for (const topology::NodeId member : group.members) {
      if (const auto index = topology.accelerator_index(member)) on_node.push_back(*index);
    }
    std::sort(on_node.begin(), on_node.end());
    if (!on_node.empty()) node_accelerators.push_back(std::move(on_node));
  }
  workloads::resolve_serving_pools(serving, static_cast<int>(topology.accelerators().size()),
                                   node_accelerators);
  if (serving.kv_plane == workloads::KvTransferPlane::kScaleOut) {
    // The KV cache leaves through the NICs: every accelerator of a pool needs one.
    for (const std::optional<workloads::ServingPool>* pool : {&serving.prefill, &serving.decode}) {
      if (!*pool) continue;
      for (const std::uint32_t a : (*pool)->placement) {
        const topology::NodeId node = topology.accelerators()[a];
        if (topology.nics(node).empty()) {
          root.at("serving")
              .at("kv_transfer_plane")
              .fail_with(fmt::format("scale-out, but accelerator {} ({}) of {} has no NIC", a,
                                     topology.name(node), (*pool)->name));
        }
      }
    }
  }
  std::string topology_spec =
      topology_node.is_scalar() ? topology_node.as_string() : topology.name();
  return ServingScenario{{},
                         std::move(document),
                         std::move(name),
                         std::move(description),
                         std::move(topology),
                         std::move(topology_spec),
                         std::move(serving),
                         std::move(network)};
}

}  // namespace stepsim
