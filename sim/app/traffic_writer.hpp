// Writers of a traffic run (sim/app/traffic_run.hpp): the summary of `stepsim traffic` and its
// `--json` (every flow and every link that carried bytes).
#pragma once

#include <cstddef>
#include <iosfwd>
#include <nlohmann/json.hpp>

#include "sim/app/traffic_run.hpp"

namespace stepsim::app {

// The flows, bytes and makespan, the flow completion times (min, median, p99, max) and the `top`
// busiest links (bandwidth, bytes carried, utilization, most flows at once).
void write_traffic_summary(std::ostream& out, const TrafficRun& run, std::size_t top);

// Every flow (src, dst, bytes, start_s, finish_s) and every link that carried bytes.
nlohmann::json traffic_json(const TrafficRun& run);

}  // namespace stepsim::app
