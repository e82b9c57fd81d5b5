#include "sim/cli/network_flags.hpp"

#include <CLI/CLI.hpp>

#include "sim/collectives/plan_options.hpp"

namespace stepsim::cli {

void add_network_flags(CLI::App& app, app::CollectiveRequest& r) {
  app.add_option("--chunk-size", r.chunk_size, "Pipelining chunk size (default 1MiB)");
  app.add_option("--channels", r.channels,
                 "Parallel rings (0: one per GPU of a node when the group spans nodes)")
      ->check(CLI::Range(0u, collectives::kMaxChannels))  // as network.channels in a scenario
      ->capture_default_str();
  app.add_option("--step-latency", r.step_latency,
                 "Software latency per algorithm step (default: calibrated)");
  app.add_option("--op-latency", r.op_latency,
                 "Software latency per operation (default: calibrated)");
  app.add_option("--links", r.links,
                 "calibrated (effective bandwidths from nccl-tests data) or line-rate")
      ->capture_default_str();
  app.add_option("--ecmp", r.ecmp,
                 "fabric (as the topology's link classes say), hash (one path per transfer), "
                 "spray (spread packet by packet over every link) or spread (split into one "
                 "flow per path)")
      ->capture_default_str();
  app.add_option("--pxn", r.pxn,
                 "on: point-to-point transfers between nodes relay through the GPU on the "
                 "receiver's rail, as NCCL's PXN; off: through the sender's own NIC")
      ->capture_default_str();
  app.add_option("--proto", r.proto,
                 "NCCL protocol: auto (NCCL's tuner picks by its predicted time), LL, LL128, "
                 "Simple (forced, as NCCL_PROTO), or off (no protocol costs); with --links "
                 "calibrated")
      ->capture_default_str();
  app.add_option("--nccl", r.nccl,
                 "NCCL version whose choices auto makes, as 2.23 or 2.23.4 (default 2.20.3, the "
                 "tuner model's; from 2.23 auto offers PAT)");
}

void add_network_flags(CLI::App& app, app::TrafficRequest& r) {
  app.add_option("--links", r.links, "calibrated or line-rate")->capture_default_str();
  app.add_option("--ecmp", r.ecmp,
                 "fabric (as the topology's link classes say), hash (one path per flow), spray "
                 "(spread packet by packet over every link) or spread (one flow per path)")
      ->capture_default_str();
}

}  // namespace stepsim::cli
