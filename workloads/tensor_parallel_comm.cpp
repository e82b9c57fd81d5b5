#include "workloads/tensor_parallel_comm.hpp"

namespace stepsim::workloads {

namespace {

// Each collective on the path of the activation: the GEMM waits for its input's AllGather, and
// the reduction waits for the GEMM.
class SerialTensorParallelComm final : public TensorParallelComm {
 public:
  using TensorParallelComm::TensorParallelComm;

  GemmInput gather_input(Phase phase, std::int64_t layer, OpIndex input) override {
    return {gather(phase, layer, input), kNoOp};
  }
  Frontier reduce_output(Phase phase, std::int64_t layer, OpIndex /*gemm_input*/,
                         OpIndex gemm) override {
    return {reduce(phase, layer, gemm), kNoOp};
  }
};

// Transformer Engine's userbuffers overlap: a GEMM and its collective start together (both after
// the GEMM's input), and what follows waits for both, so the pair takes max(GEMM,
// communication).
class OverlappedTensorParallelComm final : public TensorParallelComm {
 public:
  using TensorParallelComm::TensorParallelComm;

  GemmInput gather_input(Phase phase, std::int64_t layer, OpIndex input) override {
    return {input, gather(phase, layer, input)};
  }
  Frontier reduce_output(Phase phase, std::int64_t layer, OpIndex gemm_input,
                         OpIndex gemm) override {
    return {reduce(phase, layer, gemm_input), gemm};
  }
};

}  // namespace

TensorParallelComm::TensorParallelComm(const ParallelLayout& layout, OpGraphBuilder& graph,
                                       std::int64_t activation_bytes)
    : graph_(graph),
      tp_(layout.tp),
      sequence_parallel_(layout.sequence_parallel()),
      activation_bytes_(activation_bytes) {}

OpIndex TensorParallelComm::gather(Phase phase, std::int64_t layer, OpIndex after) {
  if (!sequence_parallel_) return after;
  return graph_.add_collective({OpName::kSpAllGather, phase, layer}, CollectiveKind::kAllGather,
                               Communicator::kTensor, ParallelDim::kSp, activation_bytes_, {after});
}

OpIndex TensorParallelComm::reduce(Phase phase, std::int64_t layer, OpIndex after) {
  if (tp_ == 1) return after;
  if (sequence_parallel_) {
    return graph_.add_collective({OpName::kSpReduceScatter, phase, layer},
                                 CollectiveKind::kReduceScatter, Communicator::kTensor,
                                 ParallelDim::kSp, activation_bytes_, {after});
  }
  return graph_.add_collective({OpName::kTpAllReduce, phase, layer}, CollectiveKind::kAllReduce,
                               Communicator::kTensor, ParallelDim::kTp, activation_bytes_, {after});
}

std::unique_ptr<TensorParallelComm> make_tensor_parallel_comm(const ParallelLayout& layout,
                                                              OpGraphBuilder& graph,
                                                              std::int64_t activation_bytes) {
  if (layout.sequence_parallel() && layout.tp_comm_overlap)
    return std::make_unique<OverlappedTensorParallelComm>(layout, graph, activation_bytes);
  return std::make_unique<SerialTensorParallelComm>(layout, graph, activation_bytes);
}

}  // namespace stepsim::workloads
