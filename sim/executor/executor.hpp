// Plays every rank's operation graph of one training step on the simulator.
//
// Model (docs/design.md, "Modeling decisions"):
//  - Each rank has streams (compute, and one or more per parallel dimension; workloads::Stream).
//    A stream runs its operations in program order, one at a time; an operation is issued when it
//    is the head of its stream and every operation it depends on has completed.
//  - Compute occupies its stream for its modeled duration.
//  - A collective starts when every member of its group has issued it (as with NCCL); the early
//    members wait, and the wait is recorded. Its plan (collectives::AlgorithmRegistry) runs as
//    flows on the shared flow network, so concurrent collectives contend for links.
//  - A send and its receive form a rendezvous: the transfer starts when both are issued.
//  - When the event queue empties with operations left, the graph stalled (mismatched collectives
//    or a dependency cycle): run() throws ExecutionStalled naming the ranks and operations waiting.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/collectives/runner/collective_runner.hpp"
#include "sim/collectives/runner/network_options.hpp"
#include "sim/common/units.hpp"
#include "topology/topology.hpp"
#include "workloads/workload.hpp"

namespace stepsim::executor {

inline constexpr std::size_t kDimensionCount = workloads::kParallelDimCount;

struct ExecutorOptions {
  collectives::NetworkOptions network;       // how collectives become flows (a scenario's network:)
  std::vector<int> detail_ranks;             // ranks whose time breakdown is computed
  bool record_link_samples = false;          // record links' utilization changes (trace counters)
  std::vector<std::uint32_t> sampled_links;  // with record_link_samples: only these (empty: all)
  // The accelerator (index into topology.accelerators()) each rank runs on; empty: rank r on
  // accelerator r. A serving pool placed on part of the topology (docs/serving.md) sets it.
  std::vector<std::uint32_t> rank_accelerators;
  // Called now and then (every 2^18 operations) with the operations done and their total, for a
  // progress line; empty: never.
  std::function<void(std::uint64_t done, std::uint64_t total)> progress;
};

// One finished operation, as the trace and the statistics see it.
struct OpRecord {
  int rank = 0;
  std::uint32_t index = 0;  // in the rank's program
  const workloads::Op* op = nullptr;
  Time issued;  // head of its stream with its dependencies done
  Time start;   // began: = issued for compute; when every member/peer had issued, for communication
  Time end;
  int peer = -1;               // send/receive: the other rank
  std::uint64_t transfer = 0;  // send/receive: an id shared by the two sides
  const char* algorithm = "";  // collectives: the algorithm that ran
};

class OpListener {
 public:
  virtual void on_op(const OpRecord& record) = 0;

 protected:
  ~OpListener() = default;
};

// Where one rank's step time went; the parts add up to the step time. Priority where several
// overlap: compute, then communication (by dimension, in ParallelDim order), then pipeline bubble
// (waiting for a pipeline peer), then waiting for collective peers, else idle.
struct RankBreakdown {
  int rank = 0;
  Time compute;
  std::array<Time, kDimensionCount> exposed{};  // indexed by workloads::ParallelDim
  Time bubble;
  Time wait;
  Time idle;
  Time total() const;
};

struct DimensionTraffic {
  std::int64_t collectives = 0;  // operations (per rank: each member counts its own)
  Bytes payload;                 // sum of buffer sizes, as nccl-tests counts them, over all ranks
  Bytes wire;                    // bytes the ranks put on the network (sum over ranks)
};

struct ExecutionResult {
  Time step_time;              // when the last rank finished
  std::vector<Time> rank_end;  // per rank
  std::array<DimensionTraffic, kDimensionCount> traffic{};
  std::vector<RankBreakdown> breakdowns;  // for options.detail_ranks, in that order
  std::uint64_t operations = 0;
  std::uint64_t flows = 0;
  std::uint64_t events = 0;
};

class ExecutionStalled : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Executor {
 public:
  // `workload` and `topology` must outlive the executor. The workload's world size must not exceed
  // the topology's accelerator count (workloads::validate_layout), and equals the size of
  // options.rank_accelerators when that is set.
  Executor(const workloads::Workload& workload, const topology::Topology& topology,
           ExecutorOptions options, OpListener* listener = nullptr);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  ExecutionResult run();

  // The flow network, for link statistics after run().
  const engine::FlowNetwork& network() const;
  // Topology link of each network link.
  const collectives::NetworkLinks& links() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace stepsim::executor
