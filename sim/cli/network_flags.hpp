// The flags of `stepsim collective` and `stepsim traffic` that set how collectives and flows
// become network traffic (what a scenario's `network:` section says), declared in one place.
#pragma once

#include "sim/app/collective_sweep.hpp"
#include "sim/app/traffic_run.hpp"

namespace CLI {
class App;
}

namespace stepsim::cli {

// --chunk-size, --channels, --step-latency, --op-latency, --links, --ecmp, --pxn, --proto, --nccl.
void add_network_flags(CLI::App& app, app::CollectiveRequest& request);

// --links and --ecmp.
void add_network_flags(CLI::App& app, app::TrafficRequest& request);

}  // namespace stepsim::cli
