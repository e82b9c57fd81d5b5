#include "sim/scenario/scenario.hpp"

#include <map>
#include <optional>

#include <fmt/format.h>

#include "sim/collectives/algorithms/algorithm_registry.hpp"
#include "sim/collectives/nccl/nccl_tuner.hpp"
#include "sim/common/input_error.hpp"
#include "sim/engine/flow_network.hpp"
#include "topology/load_topology.hpp"

namespace stepsim {

namespace {

// With no `parallelism.dp`, data parallelism fills the topology: the accelerators over tp x cp x
// pp (when they divide it; otherwise dp stays 1 and validate_layout names the mismatch). Returns
// the topology it loaded to count them, or nothing when dp is given or the topology does not load
// (or the document is not a training scenario: load_scenario reports each).
std::optional<topology::Topology> fill_data_parallelism(config::Document& document) {
  const config::Node root = document.root();
  if (!root.is_map() || !root.has("topology") || root.has("serving")) return std::nullopt;
  const auto par = root.find("parallelism");
  if (par && (!par->is_map() || par->has("dp"))) return std::nullopt;
  // A topology that does not load is reported where load_scenario reads it, after the keys
  // before it, so that errors come in the same order with dp or without.
  std::optional<topology::Topology> topology;
  try {
    topology = topology::load_topology(root.at("topology"));
  } catch (const InputError&) {
    return std::nullopt;
  }
  // A bad tp, cp or pp is reported by the layout's reader, in its order: no dp then.
  std::int64_t ranks_per_replica = 1;
  try {
    for (const char* key : {"tp", "cp", "pp"}) {
      if (!par) break;
      if (auto v = par->find(key)) ranks_per_replica *= v->as_int(1, 1 << 20);
    }
  } catch (const InputError&) {
    return topology;
  }
  const auto accelerators = static_cast<std::int64_t>(topology->accelerators().size());
  if (accelerators >= ranks_per_replica && accelerators % ranks_per_replica == 0) {
    document.set("parallelism.dp", fmt::format("{}", accelerators / ranks_per_replica));
  }
  return topology;
}

}  // namespace

collectives::NetworkOptions parse_network_options(const config::Node* network) {
  collectives::NetworkOptions s;
  if (network == nullptr || network->is_null()) return s;
  network->allow_keys({"algorithm", "calibration", "chunk_size", "max_chunks", "channels",
                       "step_latency", "op_latency", "ecmp", "pxn", "idle_tolerance", "protocol",
                       "nccl", "link_aliases"});
  if (auto n = network->find("algorithm")) {
    s.algorithm = n->as_choice(collectives::builtin_algorithms().names());
  }
  if (auto n = network->find("calibration")) {
    s.calibrated = n->as_choice({"calibrated", "line-rate"}) == "calibrated";
    s.calibration =
        s.calibrated ? collectives::calibrated_presets() : collectives::line_rate_presets();
    s.plan = s.calibration.plan_options();
  }
  if (auto n = network->find("chunk_size")) s.plan.chunk_size = n->as_bytes(Bytes(1));
  if (auto n = network->find("max_chunks")) {
    s.plan.max_chunks = static_cast<std::uint32_t>(n->as_int(1, 4096));
  }
  if (auto n = network->find("channels")) {
    s.plan.channels = static_cast<std::uint32_t>(n->as_int(0, collectives::kMaxChannels));
  }
  auto latency = [](const config::Node& n) {
    const Time t = n.as_time();
    if (t > collectives::kMaxSoftwareLatency) n.fail("a time of at most 1 s");
    return t;
  };
  if (auto n = network->find("step_latency")) s.plan.step_latency = latency(*n);
  if (auto n = network->find("op_latency")) s.plan.op_latency = latency(*n);
  if (auto n = network->find("ecmp")) {
    s.runner.ecmp = *topology::parse_ecmp_mode(n->as_choice({"fabric", "hash", "spray", "spread"}));
  }
  // Read after `calibration`, which resets the plan options.
  if (auto n = network->find("pxn")) s.plan.pxn = n->as_bool();
  if (auto n = network->find("protocol")) {
    const auto choice = collectives::parse_protocol_choice(n->as_string());
    if (!choice) n->fail("auto, off, LL, LL128 or Simple (NCCL's protocols)");
    s.plan.protocol = *choice;
  }
  if (auto n = network->find("nccl")) {
    const auto version = collectives::parse_nccl_version(n->as_string());
    if (!version)
      n->fail("an NCCL version from 2.20 on, as \"2.23\" or \"2.23.4\" (from 2.23 `auto` has PAT)");
    s.plan.nccl_version = *version;
  }
  if (auto n = network->find("link_aliases")) s.runner.link_aliases = n->as_bool();
  if (auto n = network->find("idle_tolerance"))
    s.idle_tolerance = n->as_double(0.0, engine::kMaxIdleTolerance);
  return s;
}

Scenario load_scenario(const std::filesystem::path& file,
                       const std::vector<std::string>& overrides) {
  Scenario scenario =
      load_scenario(config::Document::load_file(file), file.stem().string(), overrides);
  scenario.file = file;
  return scenario;
}

Scenario load_scenario(config::Document document, const std::string& default_name,
                       const std::vector<std::string>& overrides) {
  for (const auto& o : overrides)
    document.apply_override(o);
  std::optional<topology::Topology> loaded = fill_data_parallelism(document);

  const config::Node root = document.root();
  if (root.is_null())
    root.fail_with("the scenario is empty; it needs at least 'topology' and 'model'");
  if (!root.is_map()) root.fail("a map with the keys topology, model, parallelism, training");
  if (root.has("serving")) {
    root.at("serving").fail_with(
        "this is a serving scenario: run it with 'stepsim serve' (docs/serving.md)");
  }
  root.allow_keys({"name", "description", "topology", "model", "parallelism", "training", "compute",
                   "network"});
  const config::Node topology_node = root.at("topology");
  root.at("model");
  std::string name = default_name;
  std::string description;
  if (auto n = root.find("name")) name = n->as_string();
  if (auto n = root.find("description")) description = n->as_string();

  workloads::WorkloadSpec workload = workloads::parse_workload(root);
  const auto network_node = root.find("network");
  collectives::NetworkOptions network =
      parse_network_options(network_node ? &*network_node : nullptr);
  topology::Topology topology =
      loaded ? std::move(*loaded) : topology::load_topology(topology_node);
  // Each rank's scale-up domain, for node-limited routing and the relayed expert dispatch.
  {
    std::map<std::uint32_t, int> number;
    bool grouped = true;
    for (topology::NodeId a : topology.accelerators()) {
      const auto g = topology.group_of(a, topology::GroupKind::kScaleUp);
      if (!g) {
        grouped = false;
        break;
      }
      workload.rank_domains.push_back(
          number.emplace(*g, static_cast<int>(number.size())).first->second);
    }
    if (!grouped) workload.rank_domains.clear();
  }
  workloads::validate_layout(workload, static_cast<int>(topology.accelerators().size()));
  std::string topology_spec =
      topology_node.is_scalar() ? topology_node.as_string() : topology.name();

  return Scenario{{},
                  std::move(document),
                  std::move(name),
                  std::move(description),
                  std::move(topology),
                  std::move(topology_spec),
                  std::move(workload),
                  std::move(network)};
}

}  // namespace stepsim
