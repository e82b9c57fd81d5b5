// What the HTML report of a step shows beyond the StepReport: the operations of a few ranks over
// time, where the time went on every pipeline stage, the busiest links' utilization over the step
// (binned), and the traffic per link class. Collected during the same simulation as the report
// (simulate_step with SimulateOptions::view).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/common/units.hpp"
#include "sim/executor/executor.hpp"
#include "workloads/operation.hpp"
#include "workloads/workload.hpp"

namespace stepsim {

// One operation of a shown rank: waiting from `issued` to `start` (for a collective's members, or
// a pipeline send or receive waiting for its peer: a bubble), then running to `end`.
struct ViewSpan {
  Time issued;
  Time start;
  Time end;
  workloads::Stream stream = workloads::Stream::kCompute;
  workloads::OpKind kind = workloads::OpKind::kCompute;
  workloads::ParallelDim dim = workloads::ParallelDim::kNone;
  std::string label;       // "fwd L3 qkv mb2" (executor::op_label)
  std::int64_t bytes = 0;  // communication: the buffer; compute: HBM traffic
  double flops = 0;        // compute
  std::string algorithm;   // collectives
  int peer = -1;           // send/receive
};

struct RankView {
  int rank = 0;
  int stage = 0;
  std::string name;             // "rank 8 (node1.gpu0) tp0 pp1 dp0"
  std::vector<ViewSpan> spans;  // in completion order
};

struct StageView {
  int stage = 0;
  executor::RankBreakdown parts;  // of the stage's first rank
};

// A link's utilization in equal time bins over the step: bytes carried in the bin / (bandwidth x
// bin length).
struct LinkActivity {
  std::string link;  // "node0.gpu3 -> node0.nvswitch"
  std::string link_class;
  double utilization = 0;  // over the whole step
  std::vector<double> bins;
};

// Traffic on the links of one class (nvlink, ib, ...), over the step.
struct LinkClassTotal {
  std::string link_class;
  std::size_t links = 0;
  double bytes_carried = 0;
  double capacity_Bps = 0;         // sum of the class's links' bandwidths
  double utilization = 0;          // bytes_carried / (capacity x step time)
  double busiest_utilization = 0;  // of its busiest link
};

struct StepView {
  std::vector<RankView> ranks;
  std::vector<StageView> stages;  // every pipeline stage, in order
  Time step_time;
  std::vector<LinkActivity> links;  // busiest first
  std::vector<LinkClassTotal> link_classes;
};

// Which ranks the view shows: "auto" (the first rank of each pipeline stage, at most
// kAutoViewRanks of them spread evenly), or as --trace-ranks ("all", "N", "0-7,64"). Sorted.
inline constexpr int kAutoViewRanks = 16;
std::vector<int> parse_view_ranks(const std::string& text, const workloads::Workload& workload);

// "rank 8 (node1.gpu0) tp0 pp1 dp0" (with cp and ep coordinates when those are used), as the
// trace names its processes. Rank r runs on accelerator rank_accelerators[r] (empty: on r).
std::string rank_name(const workloads::Workload& workload, const topology::Topology& topology,
                      int rank, const std::vector<std::uint32_t>& rank_accelerators = {});

// The first rank of every pipeline stage, by stage.
std::vector<int> stage_first_ranks(const workloads::Workload& workload);

// `value` of a piecewise-constant signal that is 0 before `times.front()` and `values[i]` from
// `times[i]` on, averaged over `bins` equal bins of [0, end]. Used for the links' utilization.
std::vector<double> bin_piecewise_constant(const std::vector<Time>& times,
                                           const std::vector<double>& values, Time end,
                                           std::size_t bins);

// Records the spans of the shown ranks while the executor runs, and passes every operation on to
// `next` (the trace) when there is one.
class StepViewRecorder final : public executor::OpListener {
 public:
  StepViewRecorder(const workloads::Workload& workload, const topology::Topology& topology,
                   const std::vector<int>& ranks, executor::OpListener* next,
                   const std::vector<std::uint32_t>& rank_accelerators = {});
  void on_op(const executor::OpRecord& record) override;
  std::vector<RankView> take() { return std::move(ranks_); }

 private:
  std::vector<int> index_;  // per rank: its place in ranks_, or -1
  std::vector<RankView> ranks_;
  executor::OpListener* next_;
};

// Link views from a finished run: `sampled` (topology link indices, busiest first) with their
// utilization samples binned, and the totals per link class over every topology link.
void add_link_views(StepView& view, const topology::Topology& topology,
                    const executor::Executor& executor, const std::vector<std::uint32_t>& sampled,
                    Time step_time, std::size_t bins);

}  // namespace stepsim
