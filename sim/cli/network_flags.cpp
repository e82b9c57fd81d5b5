#include "sim/cli/network_flags.hpp"

#include <CLI/CLI.hpp>

#include "sim/collectives/plan/plan_options.hpp"
#include "sim/engine/flow_network.hpp"

namespace stepsim::cli {

CLI::Option* NetworkFlags::add(CLI::App& app, const std::string& names, std::string key,
                               const std::string& help, const std::string& shown_default) {
  // The text a flag shows as its default is only what it means when not given: the key is then
  // not set, and the scenario's default holds.
  auto value = std::make_unique<std::string>(shown_default);
  CLI::Option* option = app.add_option(names, *value, help);
  if (!shown_default.empty()) option->capture_default_str();
  flags_.push_back({option, std::move(key), std::move(value)});
  return option;
}

void NetworkFlags::add_algorithm(CLI::App& app) {
  add(app, "--algo,-a", "algorithm",
      "ring, ring-fluid, ring-pipelined, tree, halving-doubling, direct, hierarchical, "
      "hierarchical-pipelined, in-switch, nvls-tree, collnet, collnet-chain, nvls-collnet, mesh, "
      "auto",
      "auto");
}

void NetworkFlags::add_collective(CLI::App& app) {
  add(app, "--chunk-size", "chunk_size", "Pipelining chunk size (default 1MiB)");
  add(app, "--channels", "channels",
      "Parallel rings (0: one per GPU of a node when the group spans nodes)", "0")
      ->check(CLI::Range(0u, collectives::kMaxChannels));
  add(app, "--step-latency", "step_latency",
      "Software latency per algorithm step (default: calibrated)");
  add(app, "--op-latency", "op_latency", "Software latency per operation (default: calibrated)");
  add(app, "--links", "calibration",
      "calibrated (effective bandwidths from nccl-tests data) or line-rate", "calibrated");
  add(app, "--ecmp", "ecmp",
      "fabric (as the topology's link classes say), hash (one path per transfer), spray (spread "
      "packet by packet over every link) or spread (split into one flow per path)",
      "fabric");
  add(app, "--pxn", "pxn",
      "on: point-to-point transfers between nodes relay through the GPU on the receiver's rail, "
      "as NCCL's PXN; off: through the sender's own NIC",
      "on");
  add(app, "--proto", "protocol",
      "NCCL protocol: auto (NCCL's tuner picks by its predicted time), LL, LL128, Simple "
      "(forced, as NCCL_PROTO), or off (no protocol costs); with --links calibrated",
      "auto");
  add(app, "--nccl", "nccl",
      "NCCL version whose choices auto makes, as 2.23 or 2.23.4 (default 2.20.3, the tuner "
      "model's; from 2.23 auto offers PAT)");
}

void NetworkFlags::add_traffic(CLI::App& app) {
  add(app, "--links", "calibration", "calibrated or line-rate", "calibrated");
  add(app, "--ecmp", "ecmp",
      "fabric (as the topology's link classes say), hash (one path per flow), spray (spread "
      "packet by packet over every link) or spread (one flow per path)",
      "fabric");
}

void NetworkFlags::add_idle_tolerance(CLI::App& app) {
  add(app, "--idle-tolerance", "idle_tolerance",
      "Defer re-solves after departures while saturated links stay within this idle fraction "
      "(0: exact max-min; 0.05 for large all-to-alls)",
      "0")
      ->check(CLI::Range(0.0, engine::kMaxIdleTolerance));
}

app::NetworkSettings NetworkFlags::given() const {
  app::NetworkSettings settings;
  for (const Flag& f : flags_) {
    if (f.option->count() == 0) continue;
    std::string value = *f.value;
    // --pxn says on or off; the key is a boolean.
    if (f.key == "pxn" && (value == "on" || value == "off"))
      value = value == "on" ? "true" : "false";
    settings.set(f.key, value);
  }
  return settings;
}

}  // namespace stepsim::cli
