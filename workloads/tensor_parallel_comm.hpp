// The tensor-parallel communication of a generated step (Megatron-LM): per transformer layer and
// micro-batch, the collectives of a b x s' x h activation (s' = s / cp, in the training
// precision) around the column- and row-parallel GEMMs.
//  - tp only: an AllReduce after each row-parallel GEMM (attention output, MLP down) in the
//    forward and after each column-parallel one (QKV, MLP up) in the backward: 4 per layer.
//  - sequence parallelism: an AllGather of the sequence-sharded input before each such GEMM and a
//    ReduceScatter after it, in place of each AllReduce (the same volume).
//  - tp_comm_overlap (Transformer Engine's userbuffers, with sequence parallelism): each
//    collective runs beside its GEMM instead of before or after it.
// The two schedules are two emitters behind this interface, chosen once per step
// (make_tensor_parallel_comm). Every collective is on the tensor communicator.
#pragma once

#include <cstdint>
#include <memory>

#include "workloads/frontier.hpp"
#include "workloads/op_graph_builder.hpp"
#include "workloads/workload_spec.hpp"

namespace stepsim::workloads {

// The input of a GEMM preceded by an SP AllGather: what the GEMM waits for (`gemm`) and what the
// operation after the GEMM waits for besides the GEMM (`beside`; kNoOp: nothing more).
struct GemmInput {
  OpIndex gemm = kNoOp;
  OpIndex beside = kNoOp;
};

class TensorParallelComm {
 public:
  // Adds collectives of `activation_bytes` to `graph`, which must outlive it.
  TensorParallelComm(const ParallelLayout& layout, OpGraphBuilder& graph,
                     std::int64_t activation_bytes);
  virtual ~TensorParallelComm() = default;
  TensorParallelComm(const TensorParallelComm&) = delete;
  TensorParallelComm& operator=(const TensorParallelComm&) = delete;

  // The AllGather sequence parallelism needs after `after`; `after` itself without it.
  OpIndex gather(Phase phase, std::int64_t layer, OpIndex after);
  // The reduction after `after`: AllReduce, or ReduceScatter with sequence parallelism; `after`
  // itself at tp 1.
  OpIndex reduce(Phase phase, std::int64_t layer, OpIndex after);

  // Before a GEMM whose input is the sequence-sharded `input` (a column-parallel GEMM forward, a
  // row-parallel one backward): gathers it, and says what the GEMM and the next operation wait
  // for.
  virtual GemmInput gather_input(Phase phase, std::int64_t layer, OpIndex input) = 0;
  // After `gemm` (which waited for `gemm_input`) whose output is reduced: reduces it, and says
  // what the next operation waits for.
  virtual Frontier reduce_output(Phase phase, std::int64_t layer, OpIndex gemm_input,
                                 OpIndex gemm) = 0;

 private:
  OpGraphBuilder& graph_;
  int tp_ = 1;
  bool sequence_parallel_ = false;
  std::int64_t activation_bytes_ = 0;
};

// The emitter of `layout` (tp_comm_overlap with sequence parallelism: the overlapped one).
std::unique_ptr<TensorParallelComm> make_tensor_parallel_comm(const ParallelLayout& layout,
                                                              OpGraphBuilder& graph,
                                                              std::int64_t activation_bytes);

}  // namespace stepsim::workloads
