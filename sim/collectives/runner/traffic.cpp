#include "sim/collectives/runner/traffic.hpp"

#include <fmt/format.h>
#include <limits>
#include <random>

#include "sim/collectives/plan/csv.hpp"
#include "sim/collectives/runner/topology_network.hpp"
#include "sim/common/config.hpp"
#include "sim/common/input_error.hpp"
#include "sim/engine/flow_network.hpp"

namespace stepsim::collectives {

std::vector<TrafficFlow> read_flows_csv(const std::filesystem::path& path,
                                        const topology::Topology& topology) {
  return parse_flows_csv(csv::read_file(path, "flows file"), path.string(), topology);
}

std::vector<TrafficFlow> parse_flows_csv(std::string_view text, const std::string& origin,
                                         const topology::Topology& topology) {
  std::vector<TrafficFlow> flows;
  // The flows' bytes together stay within Bytes' range, so that totals and link counts cannot
  // overflow.
  constexpr std::int64_t kMaxTotal = std::numeric_limits<std::int64_t>::max();
  std::int64_t total = 0;
  bool header = false;
  std::vector<std::string> names;
  for (const csv::Line& line : csv::data_lines(text)) {
    const auto& fields = line.fields;
    auto fail = [&](const std::string& message) {
      throw InputError(fmt::format("{}:{}: {}", origin, line.number, message));
    };
    if (!header) {
      if (fields.size() != 4 || fields[0] != "src" || fields[1] != "dst" || fields[2] != "bytes" ||
          fields[3] != "start")
        fail(fmt::format("expected the header 'src,dst,bytes,start', found '{}'", line.text));
      header = true;
      continue;
    }
    if (fields.size() != 4)
      fail(fmt::format("expected 4 columns (src,dst,bytes,start), found {}", fields.size()));
    auto node = [&](std::string_view name, const char* column) {
      if (auto id = topology.find_node(name)) return *id;
      if (names.empty())
        for (std::size_t i = 0; i < topology.num_nodes(); ++i)
          names.push_back(topology.name(topology::NodeId(static_cast<std::uint32_t>(i))));
      const std::string suggestion = config::closest_match(name, names);
      fail(fmt::format("{} '{}' is not a node of topology '{}'{}", column, name, topology.name(),
                       suggestion.empty() ? "" : fmt::format(" (did you mean '{}'?)", suggestion)));
      return topology::NodeId();
    };
    TrafficFlow flow;
    flow.src = node(fields[0], "src");
    flow.dst = node(fields[1], "dst");
    try {
      flow.bytes = csv::parse_size(fields[2]);
    } catch (const InputError& e) {
      fail(fmt::format("bytes '{}': {}", fields[2], e.what()));
    }
    if (flow.bytes.count() > kMaxTotal - total)
      fail(fmt::format("bytes '{}': the flows add up to more than {} bytes", fields[2], kMaxTotal));
    total += flow.bytes.count();
    try {
      flow.start = fields[3] == "0" ? Time::zero() : parse_time(fields[3]);
    } catch (const InputError& e) {
      fail(fmt::format("start '{}': {}", fields[3], e.what()));
    }
    flows.push_back(flow);
  }
  if (!header)
    throw InputError(
        fmt::format("{}: empty flows file (expected the header "
                    "'src,dst,bytes,start' and rows)",
                    origin));
  return flows;
}

std::vector<TrafficFlow> traffic_pattern(std::string_view pattern,
                                         const topology::Topology& topology,
                                         std::span<const std::uint32_t> ranks, Bytes bytes,
                                         std::uint64_t seed) {
  const std::vector<std::string> patterns{"alltoall", "incast", "permutation", "ring"};
  if (std::find(patterns.begin(), patterns.end(), pattern) == patterns.end()) {
    const std::string suggestion = config::closest_match(pattern, patterns);
    throw InputError(
        fmt::format("unknown traffic pattern '{}'{}; expected one of: {}", pattern,
                    suggestion.empty() ? "" : fmt::format(" (did you mean '{}'?)", suggestion),
                    fmt::join(patterns, ", ")));
  }
  if (ranks.size() < 2) throw InputError("a traffic pattern needs at least 2 ranks");
  const auto& acc = topology.accelerators();
  const std::size_t n = ranks.size();
  const std::size_t count = pattern == "alltoall" ? n * (n - 1) : pattern == "incast" ? n - 1 : n;
  if (bytes.as_double() * static_cast<double>(count) >= 9.2e18)
    throw InputError(fmt::format("{} over {} ranks: {} flows of {} add up to more than {} bytes",
                                 pattern, n, count, format_bytes(bytes),
                                 std::numeric_limits<std::int64_t>::max()));
  std::vector<TrafficFlow> flows;
  auto add = [&](std::size_t i, std::size_t j) {
    flows.push_back({acc[ranks[i]], acc[ranks[j]], bytes, Time::zero()});
  };
  if (pattern == "ring") {
    for (std::size_t i = 0; i < n; ++i)
      add(i, (i + 1) % n);
  } else if (pattern == "incast") {
    for (std::size_t i = 1; i < n; ++i)
      add(i, 0);
  } else if (pattern == "alltoall") {
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j)
        if (i != j) add(i, j);
  } else {
    // Sattolo's algorithm: a uniformly random cyclic permutation, hence no rank sends to itself.
    // mt19937_64 is fully specified by the standard and the draw below uses no library
    // distribution, so the same seed gives the same flows everywhere.
    std::vector<std::size_t> target(n);
    for (std::size_t i = 0; i < n; ++i)
      target[i] = i;
    std::mt19937_64 rng(seed);
    for (std::size_t i = n - 1; i > 0; --i)
      std::swap(target[i], target[rng() % i]);
    for (std::size_t i = 0; i < n; ++i)
      add(i, target[i]);
  }
  return flows;
}

TrafficResult run_traffic(
    const topology::Topology& topology, const Calibration& calibration,
    std::span<const TrafficFlow> flows, topology::EcmpMode ecmp, double idle_tolerance,
    const std::function<void(std::size_t finished, std::size_t flows)>& progress) {
  TrafficResult result;
  result.flows.resize(flows.size());
  engine::Simulator sim;
  engine::FlowNetwork network(sim, engine::FlowNetworkOptions{.idle_tolerance = idle_tolerance});
  const NetworkLinks links = add_topology_links(network, topology, calibration);
  alias_symmetric_links(network, topology, ecmp);
  topology::Router router(topology);
  // What the start events need, behind one pointer (events hold small captures).
  struct Context {
    std::span<const TrafficFlow> flows;
    topology::Router& router;
    engine::FlowNetwork& network;
    TrafficResult& result;
    topology::EcmpMode ecmp;
    const std::function<void(std::size_t, std::size_t)>& progress;
    std::size_t finished = 0;
  } context{flows, router, network, result, ecmp, progress};
  for (std::size_t i = 0; i < flows.size(); ++i) {
    sim.schedule_at(flows[i].start, [ctx = &context, i] {
      const TrafficFlow& f = ctx->flows[i];
      auto done = [ctx, i](const engine::FlowCompletion& c) {
        ctx->result.flows[i] = {c.start, c.finish};
        if (++ctx->finished % kProgressFlows == 0 && ctx->progress)
          ctx->progress(ctx->finished, ctx->flows.size());
      };
      if (ctx->ecmp == topology::EcmpMode::kSpray ||
          (ctx->ecmp == topology::EcmpMode::kFabric && ctx->router.fabric_sprays())) {
        const topology::MultipathRoute r = ctx->router.multipath(f.src, f.dst, i, ctx->ecmp);
        std::vector<engine::LinkShare> shares;
        append_link_shares(r, shares);
        ctx->network.start_sprayed_flow(f.src.value(), f.dst.value(), f.bytes, shares, r.latency,
                                        done);
        return;
      }
      const topology::Routes routes = ctx->router.routes(
          f.src, f.dst,
          ctx->ecmp == topology::EcmpMode::kSpread ? ctx->ecmp : topology::EcmpMode::kHash, i);
      std::vector<std::vector<engine::LinkId>> paths;
      for (const auto& p : routes.paths) {
        paths.emplace_back();
        for (topology::LinkIndex l : p)
          paths.back().push_back(engine::LinkId{l.value()});
      }
      if (paths.size() == 1) {
        ctx->network.start_flow(f.src.value(), f.dst.value(), f.bytes, paths.front(), done);
      } else {
        std::vector<engine::WeightedPath> weighted;
        for (const auto& p : paths)
          weighted.push_back({p, 1.0});
        ctx->network.start_flow(f.src.value(), f.dst.value(), f.bytes, weighted, done);
      }
    });
  }
  sim.run();
  network.check_invariants();
  result.makespan = sim.now();
  for (std::uint32_t l = 0; l < topology.num_links(); ++l) {
    const engine::LinkStatistics s = network.link_statistics(engine::LinkId{l});
    if (s.bytes_carried <= 0) continue;
    result.links.push_back({topology::LinkIndex(l), s.bytes_carried, s.utilization, s.busy_time,
                            s.peak_flows, links.bandwidth[l]});
  }
  return result;
}

}  // namespace stepsim::collectives
