// What `stepsim run` reports about one simulated training step: the summary people read, and the
// JSON report (docs/report-schema.md) tools read. Built from the scenario and the executor's
// result; printing and serialization are deterministic (no wall-clock figures).
#pragma once

#include <array>
#include <cstdint>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/common/units.hpp"
#include "sim/executor/executor.hpp"
#include "workloads/memory_model.hpp"

namespace stepsim {

struct Scenario;

struct LinkReport {
  std::string name;  // "node0.gpu3 -> nvswitch0"
  std::string link_class;
  BytesPerSecond bandwidth;  // as simulated (calibrated)
  double utilization = 0;    // bytes carried / (bandwidth x step time)
  double bytes_carried = 0;
  std::uint32_t peak_flows = 0;
};

struct DimensionReport {
  std::string name;  // "tp", "sp", "cp", "ep", "pp", "dp"
  std::int64_t operations_per_rank = 0;
  double payload_bytes_per_rank = 0;  // buffer sizes as nccl-tests counts them
  double wire_bytes_per_rank = 0;     // bytes each rank puts on the network
  Time exposed;                       // on the first representative rank
};

struct BreakdownReport {
  std::string label;  // "rank 0 (stage 0)"
  executor::RankBreakdown parts;
};

struct StepReport {
  std::string scenario;
  std::string topology;
  std::string model;
  std::string layout;  // "tp8 pp8 dp16 (1f1b, zero1)"
  int world_size = 0;
  double idle_tolerance = 0.0;  // network.idle_tolerance (0: exact max-min)
  Time step_time;
  std::int64_t tokens_per_step = 0;
  std::int64_t samples_per_step = 0;
  double tokens_per_s = 0;
  double samples_per_s = 0;
  double model_flops_per_step = 0;  // 3 x forward FLOPs (matmul + attention) x tokens
  double tflops_per_accelerator = 0;
  double peak_tflops = 0;
  double mfu = 0;
  std::vector<BreakdownReport> breakdowns;
  std::vector<DimensionReport> dimensions;  // only those with traffic
  std::vector<LinkReport> busiest_links;    // top 10 by utilization
  std::vector<workloads::MemoryEstimate> memory;
  std::uint64_t operations = 0;
  std::uint64_t flows = 0;
  std::uint64_t events = 0;
  // Work of the flow network (for benchmarks; not in the summary or the JSON report): max-min
  // solves, classes they covered, and solves repeated for a boundary link that filled up; of the
  // classes covered, those whose rates came from a twin part (sim/engine/twin_parts.hpp).
  std::uint64_t solves = 0;
  std::uint64_t classes_solved = 0;
  std::uint64_t boundary_expansions = 0;
  std::uint64_t twin_classes = 0;
  nlohmann::ordered_json resolved_scenario;
};

// Representative ranks for the breakdown: the first rank of the first, middle and last stages.
std::vector<int> representative_ranks(const workloads::Workload& workload);

StepReport make_step_report(const Scenario& scenario, const workloads::Workload& workload,
                            const executor::Executor& executor,
                            const executor::ExecutionResult& result);

void print_summary(std::ostream& out, const StepReport& report);
// The "Memory per rank" table of the summary (one row per pipeline stage, EXCEEDS past capacity).
void print_memory(std::ostream& out, const std::vector<workloads::MemoryEstimate>& memory);
// "tp8 pp8 dp16 sp (1f1b, zero 1)": the layout as the summary prints it.
std::string layout_text(const workloads::WorkloadSpec& spec);
nlohmann::ordered_json to_json(const StepReport& report);
// A rank's exposed communication per parallel dimension, in seconds, keyed by the dimension's name
// ("tp", "dp", ...), as the reports write it.
nlohmann::ordered_json exposed_json(const std::array<Time, executor::kDimensionCount>& exposed);

// The configuration tree as JSON (scalars stay strings, as written).
nlohmann::ordered_json to_json(const config::Node& node);

}  // namespace stepsim
