// Writers of a collective sweep (sim/app/collective_sweep.hpp): the nccl-tests table of `stepsim
// collective`, its `--json` rows and its `--html` page.
#pragma once

#include <iosfwd>
#include <nlohmann/json.hpp>
#include <vector>

#include "sim/app/collective_sweep.hpp"

namespace stepsim::app {

// The table: a header naming the setup, one row per size (size, count, type, time in us, algbw
// and busbw in GB/s, algorithm), and nccl-tests' "Avg bus bandwidth" line.
void write_collective_table(std::ostream& out, const CollectiveSweep& sweep);

// The setup and every row as JSON (keys with their units: size_bytes, time_us, busbw_GBps...).
nlohmann::json collective_json(const CollectiveSweep& sweep);

// The HTML page: busbw and algbw against the size, with `published` overlaid.
void write_collective_page(std::ostream& out, const CollectiveSweep& sweep,
                           const std::vector<PublishedBusbw>& published);

}  // namespace stepsim::app
