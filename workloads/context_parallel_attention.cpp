#include "workloads/context_parallel_attention.hpp"

namespace stepsim::workloads {

ContextParallelAttention::ContextParallelAttention(const WorkloadSpec& spec,
                                                   const MicroBatchShape& shape,
                                                   OpGraphBuilder& graph, StageCompute& compute)
    : spec_(spec), shape_(shape), graph_(graph), compute_(compute) {}

OpIndex ContextParallelAttention::core(Phase phase, std::int64_t layer, const OpCost& cost,
                                       OpIndex after, OpIndex also) {
  const ParallelLayout& layout = spec_.parallel;
  if (layout.cp == 1) {
    return compute_.add({OpName::kAttentionCore, phase, layer}, ComputeKind::kAttention, cost,
                        {after, also});
  }
  if (layout.cp_mode == CpMode::kUlysses) return ulysses(phase, layer, cost, after, also);
  return ring(phase, layer, cost, after, also);
}

// Heads are scattered and the sequence gathered before attention, and back after; the backward
// sends the gradients the same way.
OpIndex ContextParallelAttention::ulysses(Phase phase, std::int64_t layer, const OpCost& cost,
                                          OpIndex after, OpIndex also) {
  const ModelSpec& model = spec_.model;
  const int tp = spec_.parallel.tp;
  const bool backward = phase == Phase::kBackward;
  const std::int64_t qkv_bytes = shape_.tokens *
                                 (model.q_width() + model.kv_width() + model.attn_out_width()) /
                                 tp * shape_.element_bytes;
  const std::int64_t out_bytes = shape_.tokens * model.attn_out_width() / tp * shape_.element_bytes;
  const OpLabel exchange{OpName::kCpAllToAll, phase, layer};
  const OpIndex in =
      graph_.add_collective(exchange, CollectiveKind::kAllToAll, Communicator::kContext,
                            ParallelDim::kCp, backward ? out_bytes : qkv_bytes, {after, also});
  const OpIndex attended =
      compute_.add({OpName::kAttentionCore, phase, layer}, ComputeKind::kAttention, cost, {in});
  return graph_.add_collective(exchange, CollectiveKind::kAllToAll, Communicator::kContext,
                               ParallelDim::kCp, backward ? qkv_bytes : out_bytes, {attended});
}

// cp steps, each on one block of keys and values; the block for step j + 1 arrives while step j
// computes.
OpIndex ContextParallelAttention::ring(Phase phase, std::int64_t layer, const OpCost& cost,
                                       OpIndex after, OpIndex also) {
  const ModelSpec& model = spec_.model;
  const int cp = spec_.parallel.cp;
  const bool backward = phase == Phase::kBackward;
  const std::int64_t kv_bytes = shape_.tokens * (model.kv_width() + model.attn_out_width()) /
                                spec_.parallel.tp * shape_.element_bytes * (backward ? 2 : 1);
  // The kernels of `cost` are one block's (layer_costs.hpp); its FLOPs and bytes the whole's.
  OpCost block_cost = cost;
  block_cost.flops /= cp;
  block_cost.bytes /= cp;
  const OpLabel block_label{OpName::kAttentionCore, phase, layer};
  // The exchanges carry no layer label (they are matched by tag).
  const OpLabel exchange{OpName::kCpKvExchange, phase, kNoLayer};
  OpIndex block = compute_.add(block_label, ComputeKind::kAttention, block_cost, {after, also});
  OpIndex received = kNoOp;
  for (int j = 0; j + 1 < cp; ++j) {
    const std::int64_t tag = next_kv_tag_++;
    const OpIndex ready = j == 0 ? after : received;
    graph_.add_send(exchange, Communicator::kContext, +1, kv_bytes, tag, {ready});
    received = graph_.add_receive(exchange, Communicator::kContext, -1, kv_bytes, tag, {ready});
    block = compute_.add(block_label, ComputeKind::kAttention, block_cost, {received, block});
  }
  return block;
}

}  // namespace stepsim::workloads
