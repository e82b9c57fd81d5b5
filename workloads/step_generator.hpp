// Generates the operations of one training step for the ranks of one pipeline stage, as
// Megatron-LM (with its distributed optimizer), DeepSpeed ZeRO or FSDP would issue them:
// per micro-batch and layer the forward and backward compute, the tensor-parallel AllReduce or
// sequence-parallel AllGather/ReduceScatter, the context-parallel KV ring or Ulysses all-to-all,
// the expert dispatch/combine all-to-all, the pipeline sends and receives in schedule order, the
// bucketed data-parallel gradient reduction overlapped with backward, ZeRO-3 parameter gathers,
// the optimizer step and the ZeRO-1/2 parameter gather. docs/workloads.md, "The step graph", lists
// each operation, its size and its dependencies.
#pragma once

#include "workloads/layer_costs.hpp"
#include "workloads/program.hpp"
#include "workloads/workload_spec.hpp"

namespace stepsim::workloads {

// The program of every rank of pipeline stage `stage` (0-based). All members of a communicator
// group are in the same stage, so they run the same program and match collectives by
// (group, Op::seq). Requires a spec from parse_workload (a valid layout).
Program generate_stage_program(const WorkloadSpec& spec, int stage);

// One forward pass of an inference server (docs/serving.md): the same operations as a training
// step's forward of one micro-batch (embedding, every layer with its tensor-parallel and expert
// collectives, final norm and output projection) for the tokens of `shape`, without loss,
// backward or optimizer. Each attention core also reads `kv_cache_bytes_per_layer` from HBM:
// the keys and values of the earlier tokens it attends to (decode reads the whole context).
struct ForwardPass {
  MicroBatchShape shape;
  double kv_cache_bytes_per_layer = 0;
  // When >= 0, the FLOPs of each attention core in place of the training convention's (serving:
  // MLA's decode attention with the up-projections absorbed, serving_spec.hpp).
  double attention_core_flops_per_layer = -1;
  // Tokens whose logits are computed (an inference server projects only the last token of each
  // sequence); 0: every token of `shape`.
  std::int64_t logit_tokens = 0;
};

// The forward program of every rank of a single-stage layout (pp = 1, vpp = 1). Requires a spec
// whose layout passed parse_workload's checks (serving_spec.hpp builds one).
Program generate_forward_program(const WorkloadSpec& spec, const ForwardPass& pass);

// AllToAllv traffic matrices that expert all-to-alls refer to by Op::matrix: index 0 is the
// dispatch pattern (forward dispatch, backward of combine), 1 the combine pattern: skewed routing
// (expert_traffic_matrix, with the rank loads of node-limited routing when moe.max_nodes_per_token
// is set) or the relayed dispatch (relayed_traffic_matrix). Empty when routing is uniform and the
// dispatch direct (the all-to-alls are then AllToAll with equal shares) or ep == 1.
std::vector<std::vector<std::int64_t>> expert_traffic_matrices(const WorkloadSpec& spec);

}  // namespace stepsim::workloads
