// `sweep_collective`: one collective timed at each size of a sweep on an otherwise idle network,
// as nccl-tests does (size, count, time, algbw, busbw; busbw as nccl-tests' doc/PERFORMANCE.md
// defines it). The use behind `stepsim collective` and stepsim.collective() in Python.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sim/app/network_settings.hpp"
#include "sim/common/collective_kind.hpp"
#include "sim/common/units.hpp"
#include "sim/run/html_report.hpp"

namespace stepsim::app {

// Where a sweep is, for a progress line: size `index` of `sizes` (of `size` bytes), whose plan has
// `transfers` transfers of which `done` are finished. Called with done == 0 as each size starts.
struct SweepProgress {
  std::size_t index = 0;
  std::size_t sizes = 0;
  Bytes size;
  std::uint64_t transfers = 0;
  std::uint64_t done = 0;
};

// The sweep to run. Texts are as the user wrote them (the command line's flags, the same names
// with underscores in Python); each is checked, and a bad one is an InputError naming the flag (the
// network settings: the key).
struct CollectiveRequest {
  std::string topology;  // preset spec or YAML file
  std::string op = "allreduce";
  std::string ranks = "all";      // N, a list 0,2,4, ranges 0-7,16-23, or all
  std::string sizes = "8B:1GiB";  // MIN:MAX doubling, or one size
  bool sizes_given = false;       // alltoallv with a matrix: sweep the sizes, not the file's own
  // The scenario's network keys (algorithm, calibration, protocol, nccl, chunk_size, channels,
  // step_latency, op_latency, ecmp, pxn; docs/collectives.md): their defaults unless set.
  NetworkSettings network;
  std::uint32_t root = 0;                              // broadcast, reduce: index in the group
  std::string matrix;                                  // alltoallv: CSV of n x n per-pair sizes
  std::optional<double> skew;                          // alltoallv: Zipf skew of the receivers
  std::string max_memory;                              // see memory_limit(); empty: the machine's
  std::function<void(const SweepProgress&)> progress;  // now and then, when set
  std::function<void()> before_runs;  // once the request is checked, before the first run
};

// One size of the sweep.
struct CollectiveRow {
  Bytes size;
  std::int64_t count = 0;  // elements of 4-byte floats, as nccl-tests counts them
  Time time;
  double algbw_GBps = 0;
  double busbw_GBps = 0;
  std::string algorithm;  // what ran (auto's choice, the protocol)
};

struct CollectiveSweep {
  CollectiveRequest request;  // as given (progress and before_runs cleared)
  CollectiveKind kind = CollectiveKind::kAllReduce;
  std::string topology_name;
  std::vector<std::uint32_t> ranks;     // accelerator indices of the group
  std::uint32_t accelerators = 0;       // in the topology
  collectives::NetworkOptions network;  // as the settings give them
  std::string protocol;                 // the protocol setting as given ("auto" when not set)
  std::vector<CollectiveRow> rows;
};

// Runs the sweep.
//   THROWS: InputError for a bad value (naming its flag), a group of fewer than 2 ranks, an
//           algorithm that cannot run the operation on the group, or a sweep that needs more
//           memory than allowed.
CollectiveSweep sweep_collective(const CollectiveRequest& request);

// The published busbw of `cases_file` (validation cases) that match the sweep's setup, or nullopt
// when the file does not exist.
std::optional<std::vector<PublishedBusbw>> published_points(const CollectiveSweep& sweep,
                                                            const std::string& cases_file);

}  // namespace stepsim::app
