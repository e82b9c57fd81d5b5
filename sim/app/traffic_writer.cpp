#include "sim/app/traffic_writer.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <ostream>

namespace stepsim::app {

using collectives::LinkOutcome;

void write_traffic_summary(std::ostream& out, const TrafficRun& run, std::size_t top) {
  std::vector<double> fct;
  double total = 0;
  for (std::size_t i = 0; i < run.flows.size(); ++i) {
    fct.push_back((run.result.flows[i].finish - run.result.flows[i].start).seconds());
    total += run.flows[i].bytes.as_double();
  }
  std::sort(fct.begin(), fct.end());
  auto pct = [&](double p) {
    if (fct.empty()) return Time::zero();
    const auto k = static_cast<std::size_t>(p * static_cast<double>(fct.size() - 1));
    return Time::from_seconds(fct[k]);
  };
  out << fmt::format("traffic on {}: {} flows, {} in total, links {}\n", run.topology.name(),
                     run.flows.size(), format_bytes(Bytes(static_cast<std::int64_t>(total))),
                     run.links);
  out << fmt::format("makespan: {}\n", format_time(run.result.makespan));
  out << fmt::format("flow completion time: min {}  median {}  p99 {}  max {}\n",
                     format_time(pct(0)), format_time(pct(0.5)), format_time(pct(0.99)),
                     format_time(pct(1)));
  std::vector<LinkOutcome> busiest = run.result.links;
  std::stable_sort(busiest.begin(), busiest.end(),
                   [](const auto& a, const auto& b) { return a.utilization > b.utilization; });
  if (busiest.size() > top) busiest.resize(top);
  out << fmt::format("\n{:<44} {:>10} {:>12} {:>7} {:>6}\n", "busiest links", "bandwidth",
                     "carried", "util", "flows");
  for (const LinkOutcome& l : busiest)
    out << fmt::format("{:<44} {:>10} {:>12} {:>6.1f}% {:>6}\n", run.topology.describe(l.link),
                       format_bandwidth(l.bandwidth),
                       format_bytes(Bytes(static_cast<std::int64_t>(l.bytes_carried))),
                       l.utilization * 100, l.peak_flows);
}

nlohmann::json traffic_json(const TrafficRun& run) {
  nlohmann::json j;
  j["topology"] = run.topology.name();
  j["makespan_s"] = run.result.makespan.seconds();
  nlohmann::json flows = nlohmann::json::array();
  for (std::size_t i = 0; i < run.flows.size(); ++i)
    flows.push_back({{"src", run.topology.name(run.flows[i].src)},
                     {"dst", run.topology.name(run.flows[i].dst)},
                     {"bytes", run.flows[i].bytes.count()},
                     {"start_s", run.result.flows[i].start.seconds()},
                     {"finish_s", run.result.flows[i].finish.seconds()}});
  j["flows"] = flows;
  nlohmann::json links = nlohmann::json::array();
  for (const LinkOutcome& l : run.result.links)
    links.push_back({{"link", run.topology.describe(l.link)},
                     {"bandwidth_GBps", l.bandwidth.gigabytes_per_second()},
                     {"bytes", l.bytes_carried},
                     {"utilization", l.utilization},
                     {"busy_s", l.busy.seconds()},
                     {"peak_flows", l.peak_flows}});
  j["links"] = links;
  return j;
}

}  // namespace stepsim::app
