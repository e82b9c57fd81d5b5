// The tensor-parallel communication emitters: where each collective sits relative to its GEMM
// (serial: before or after it; tp_comm_overlap: beside it), and the collectives of a whole step
// against Megatron's closed forms (4 per layer and micro-batch of b x s x h elements).
#include <gtest/gtest.h>

#include <vector>

#include "tests/workloads/workload_of.hpp"
#include "workloads/step_generator.hpp"
#include "workloads/tensor_parallel_comm.hpp"

namespace stepsim::workloads {
namespace {

constexpr std::int64_t kBytes = 2 * 2048 * 1024 * 2;  // b x s x h elements of 2 bytes

OpIndex add_gemm(OpGraphBuilder& graph, OpIndex after) {
  return graph.add_compute({OpName::kMlpUp, Phase::kForward, 0}, ComputeKind::kGemm, 0, 0,
                           Time::zero(), {after});
}

std::vector<std::uint32_t> deps_of(const Program& p, OpIndex op) {
  const auto deps = p.deps_of(p.ops[op]);
  return {deps.begin(), deps.end()};
}

struct Emitted {
  GemmInput input;
  OpIndex first = kNoOp;   // the GEMM after the gather
  OpIndex second = kNoOp;  // the GEMM whose output is reduced
  Frontier out;
  Program program;
};

// norm -> [gather] -> first GEMM -> second GEMM -> [reduce], as a dense MLP's forward.
Emitted emit(const ParallelLayout& layout) {
  OpGraphBuilder graph;
  const auto tp = make_tensor_parallel_comm(layout, graph, kBytes);
  Emitted e;
  const OpIndex norm = add_gemm(graph, kNoOp);
  e.input = tp->gather_input(Phase::kForward, 0, norm);
  e.first = add_gemm(graph, e.input.gemm);
  e.second = add_gemm(graph, e.first);
  e.out = tp->reduce_output(Phase::kForward, 0, e.first, e.second);
  e.program = graph.take_program();
  return e;
}

TEST(TensorParallelComm, WithoutSequenceParallelismTheGemmIsReducedByAnAllReduce) {
  ParallelLayout layout;
  layout.tp = 4;
  const Emitted e = emit(layout);
  ASSERT_EQ(e.program.ops.size(), 4u);  // no AllGather
  EXPECT_EQ(e.input.gemm, 0u);
  EXPECT_EQ(e.input.beside, kNoOp);
  const Op& reduce = e.program.ops[3];
  EXPECT_EQ(reduce.name, OpName::kTpAllReduce);
  EXPECT_EQ(reduce.collective, CollectiveKind::kAllReduce);
  EXPECT_EQ(reduce.group, Communicator::kTensor);
  EXPECT_EQ(reduce.dim, ParallelDim::kTp);
  EXPECT_EQ(reduce.bytes, kBytes);
  EXPECT_EQ(deps_of(e.program, 3), std::vector<std::uint32_t>{e.second});
  EXPECT_EQ(e.out.main, 3u);
  EXPECT_EQ(e.out.side, kNoOp);
}

TEST(TensorParallelComm, SequenceParallelismGathersBeforeTheGemmAndReduceScattersAfter) {
  ParallelLayout layout;
  layout.tp = 4;
  layout.sp = true;
  const Emitted e = emit(layout);
  ASSERT_EQ(e.program.ops.size(), 5u);
  const Op& gather = e.program.ops[1];
  EXPECT_EQ(gather.name, OpName::kSpAllGather);
  EXPECT_EQ(gather.collective, CollectiveKind::kAllGather);
  EXPECT_EQ(gather.dim, ParallelDim::kSp);
  EXPECT_EQ(gather.bytes, kBytes);
  EXPECT_EQ(e.input.gemm, 1u);  // the GEMM waits for the gather
  EXPECT_EQ(e.input.beside, kNoOp);
  const Op& reduce = e.program.ops[4];
  EXPECT_EQ(reduce.collective, CollectiveKind::kReduceScatter);
  EXPECT_EQ(reduce.bytes, kBytes);
  EXPECT_EQ(deps_of(e.program, 4), std::vector<std::uint32_t>{e.second});
  EXPECT_EQ(e.out.main, 4u);
  EXPECT_EQ(e.out.side, kNoOp);
}

TEST(TensorParallelComm, OverlapRunsEachCollectiveBesideItsGemm) {
  ParallelLayout layout;
  layout.tp = 4;
  layout.sp = true;
  layout.tp_comm_overlap = true;
  const Emitted e = emit(layout);
  ASSERT_EQ(e.program.ops.size(), 5u);
  // The first GEMM starts with its gather, after the norm; the second waits for both.
  EXPECT_EQ(e.input.gemm, 0u);
  EXPECT_EQ(e.input.beside, 1u);
  EXPECT_EQ(e.program.ops[1].collective, CollectiveKind::kAllGather);
  // The ReduceScatter starts with the second GEMM, after the first; what follows waits for both.
  EXPECT_EQ(e.program.ops[4].collective, CollectiveKind::kReduceScatter);
  EXPECT_EQ(deps_of(e.program, 4), std::vector<std::uint32_t>{e.first});
  EXPECT_EQ(e.out.main, 4u);
  EXPECT_EQ(e.out.side, e.second);
}

TEST(TensorParallelComm, NothingToCommunicateAtTp1) {
  ParallelLayout layout;
  OpGraphBuilder graph;
  const auto tp = make_tensor_parallel_comm(layout, graph, kBytes);
  const OpIndex gemm = add_gemm(graph, kNoOp);
  EXPECT_EQ(tp->reduce(Phase::kForward, 0, gemm), gemm);
  EXPECT_EQ(tp->gather(Phase::kForward, 0, gemm), gemm);
  EXPECT_EQ(graph.take_program().ops.size(), 1u);
}

int count(const Program& p, OpName name, CollectiveKind kind, std::int64_t bytes) {
  int n = 0;
  for (const Op& op : p.ops) {
    if (op.layer != kNoLayer && op.name == name && op.collective == kind && op.bytes == bytes) ++n;
  }
  return n;
}

TEST(TensorParallelComm, AStepHasFourCollectivesOfBshPerLayerAndMicroBatch) {
  // 4 layers, 3 micro-batches of b = 2 sequences of s = 2048 tokens, h = 1024, bf16.
  const std::string model = "{layers: 4, hidden: 1024, heads: 16, vocab: 32000, ffn: 4096}";
  const std::string training = "{seq_len: 2048, micro_batch: 2, global_batch: 6}";
  const int per_step = 4 * 4 * 3;
  const Program tp = generate_stage_program(workload_of(model, "{tp: 4}", training), 0);
  EXPECT_EQ(count(tp, OpName::kTpAllReduce, CollectiveKind::kAllReduce, kBytes), per_step);
  // Sequence parallelism: an AllGather and a ReduceScatter for each AllReduce, with or without
  // the overlap (which moves only the dependencies).
  for (const char* sp : {"{tp: 4, sp: true}", "{tp: 4, sp: true, tp_comm_overlap: true}"}) {
    const Program p = generate_stage_program(workload_of(model, sp, training), 0);
    EXPECT_EQ(count(p, OpName::kSpAllGather, CollectiveKind::kAllGather, kBytes), per_step) << sp;
    EXPECT_EQ(count(p, OpName::kSpReduceScatter, CollectiveKind::kReduceScatter, kBytes), per_step)
        << sp;
    EXPECT_EQ(count(p, OpName::kTpAllReduce, CollectiveKind::kAllReduce, kBytes), 0) << sp;
  }
}

}  // namespace
}  // namespace stepsim::workloads
