// Writes the step's timeline as a Chrome trace while the executor runs: one process per traced
// rank, named with its accelerator and parallel coordinates; one thread per stream; a complete
// event per operation (with layer, micro-batch, bytes, FLOPs, algorithm); flow arrows from each
// send to its receive; waits before collectives as their own slices. After the run, counter
// tracks with the utilization of the busiest links.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "sim/executor/executor.hpp"
#include "sim/output/trace_writer.hpp"
#include "topology/topology.hpp"
#include "workloads/workload.hpp"

namespace stepsim {

// Where a run's ranks go in a trace that holds several runs (`stepsim serve`: the prefill pass
// and the decode step in one file).
struct TraceProcesses {
  int first_pid = 0;        // rank r is process first_pid + r; the busiest links follow the ranks
  std::string name_prefix;  // before every process name: "decode: "
  // Rank r runs on accelerator rank_accelerators[r] (empty: on accelerator r), as
  // executor::ExecutorOptions::rank_accelerators.
  std::vector<std::uint32_t> rank_accelerators;
};

class TraceListener final : public executor::OpListener {
 public:
  // `ranks` selects the traced ranks (all when empty). The trace is renamed into place by
  // finish() (TraceWriter); `guard` knows its temporary file.
  TraceListener(const std::filesystem::path& path, const workloads::Workload& workload,
                const topology::Topology& topology, std::vector<int> ranks,
                output::OutputGuard* guard = nullptr);
  // Writes into `writer`, which the caller closes; finish() adds the link counters only.
  TraceListener(output::TraceWriter& writer, const workloads::Workload& workload,
                const topology::Topology& topology, std::vector<int> ranks,
                TraceProcesses processes);
  ~TraceListener() = default;
  void on_op(const executor::OpRecord& record) override;
  // Adds counter tracks for the `links` (topology link indices) and closes the file when the
  // listener opened it.
  void finish(const executor::Executor& executor, const std::vector<std::uint32_t>& links);

 private:
  void name_processes(std::vector<int> ranks);
  bool traced(int rank) const {
    return rank >= 0 && rank < static_cast<int>(traced_.size()) && traced_[rank];
  }
  int pid(int rank) const { return processes_.first_pid + rank; }
  std::optional<output::TraceWriter> owned_;
  output::TraceWriter& writer_;
  const workloads::Workload& workload_;
  const topology::Topology& topology_;
  TraceProcesses processes_;
  std::vector<bool> traced_;
  std::string label_;
};

// Parses --trace-ranks: "auto", "all", "N" (ranks 0..N-1), or a list of ranks and ranges "0-7,64".
// "auto" is every rank in a world of at most kAutoTraceRanks; in a larger world, the ranks of the
// first d data-parallel replicas (whole pipelines, with their tensor and context parallel ranks),
// d the most that keep the count within kAutoTraceRanks, and at least one replica. The result is
// sorted; empty means every rank.
inline constexpr int kAutoTraceRanks = 64;
std::vector<int> parse_trace_ranks(const std::string& text, const workloads::Workload& workload);

}  // namespace stepsim
