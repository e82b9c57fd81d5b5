// Generates the operations of one training step for the ranks of one pipeline stage, as
// Megatron-LM (with its distributed optimizer), DeepSpeed ZeRO or FSDP would issue them:
// per micro-batch and layer the forward and backward compute, the tensor-parallel AllReduce or
// sequence-parallel AllGather/ReduceScatter, the context-parallel KV ring or Ulysses all-to-all,
// the expert dispatch/combine all-to-all, the pipeline sends and receives in schedule order, the
// bucketed data-parallel gradient reduction overlapped with backward, ZeRO-3 parameter gathers,
// the optimizer step and the ZeRO-1/2 parameter gather. docs/workloads.md, "The step graph", lists
// each operation, its size and its dependencies.
#pragma once

#include "workloads/program.hpp"
#include "workloads/workload_spec.hpp"

namespace stepsim::workloads {

// The program of every rank of pipeline stage `stage` (0-based). All members of a communicator
// group are in the same stage, so they run the same program and match collectives by
// (group, Op::seq). Requires a spec from parse_workload (a valid layout).
Program generate_stage_program(const WorkloadSpec& spec, int stage);

// AllToAllv traffic matrices that expert all-to-alls refer to by Op::matrix: index 0 is the
// dispatch pattern (forward dispatch, backward of combine), 1 the combine pattern: skewed routing
// (expert_traffic_matrix, with the rank loads of node-limited routing when moe.max_nodes_per_token
// is set) or the relayed dispatch (relayed_traffic_matrix). Empty when routing is uniform and the
// dispatch direct (the all-to-alls are then AllToAll with equal shares) or ep == 1.
std::vector<std::vector<std::int64_t>> expert_traffic_matrices(const WorkloadSpec& spec);

}  // namespace stepsim::workloads
