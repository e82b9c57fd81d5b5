// A decode step's collectives alone: `count` back-to-back collectives of `bytes` on every `group`
// of the decode pool at batch 1, on the same executor and network as the step.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "sim/executor/executor.hpp"
#include "sim/scenario/serving_scenario.hpp"
#include "workloads/op_graph_builder.hpp"
#include "workloads/workload.hpp"

namespace stepsim::test {

inline Time collectives_alone(const ServingScenario& s, workloads::OpName name, CollectiveKind kind,
                              workloads::Communicator group, workloads::ParallelDim dim, int count,
                              std::int64_t bytes) {
  workloads::WorkloadSpec spec =
      workloads::serving_workload(s.serving, workloads::ServingPhase::kDecode, 1);
  workloads::OpGraphBuilder graph;
  workloads::OpIndex previous = workloads::kNoOp;
  for (int i = 0; i < count; ++i)
    previous = graph.add_collective({name, workloads::Phase::kForward, workloads::kNoLayer}, kind,
                                    group, dim, bytes, {previous});
  std::vector<workloads::Program> programs;
  programs.push_back(graph.take_program());
  const workloads::Workload workload(std::move(spec), std::move(programs));
  executor::ExecutorOptions options;
  options.network = s.network;
  executor::Executor executor(workload, s.topology, options);
  return executor.run().step_time;
}

}  // namespace stepsim::test
