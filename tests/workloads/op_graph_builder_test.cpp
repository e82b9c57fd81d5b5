// The operation-graph builder: dependencies deduplicated and checked, labels and sequence numbers
// assigned, and every limit of the compact Op (operation.hpp) enforced by an exception instead of
// a silent narrowing.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "sim/common/input_error.hpp"
#include "workloads/op_graph_builder.hpp"

namespace stepsim::workloads {
namespace {

const OpLabel kQkv{OpName::kQkv, Phase::kForward, 3};

OpIndex add_kernel(OpGraphBuilder& graph, std::initializer_list<OpIndex> deps) {
  return graph.add_compute(kQkv, ComputeKind::kGemm, 1e9, 1e6, Time::us(10), deps);
}

TEST(OpGraphBuilder, SkipsEmptySlotsAndRepeatedDependencies) {
  OpGraphBuilder graph;
  const OpIndex a = add_kernel(graph, {});
  const OpIndex b = add_kernel(graph, {a, kNoOp});
  const OpIndex c = add_kernel(graph, {b, a, b, kNoOp, a});
  EXPECT_EQ(graph.last_op(), c);
  const Program p = graph.take_program();
  ASSERT_EQ(p.ops.size(), 3u);
  EXPECT_EQ(std::vector<OpIndex>(p.deps_of(p.ops[1]).begin(), p.deps_of(p.ops[1]).end()),
            std::vector<OpIndex>{a});
  EXPECT_EQ(std::vector<OpIndex>(p.deps_of(p.ops[2]).begin(), p.deps_of(p.ops[2]).end()),
            (std::vector<OpIndex>{b, a}));
  EXPECT_EQ(p.ops[2].layer, 3);
  EXPECT_EQ(p.ops[2].bytes, 1'000'000);
  EXPECT_EQ(p.ops[2].duration, Time::us(10));
}

TEST(OpGraphBuilder, LongDependencyListsKeepTheirOrderWithoutRepeats) {
  OpGraphBuilder graph;
  std::vector<OpIndex> deps;
  for (int i = 0; i < 40; ++i)
    deps.push_back(add_kernel(graph, {}));
  deps.push_back(deps[5]);
  deps.push_back(kNoOp);
  const OpLabel step{OpName::kOptimizerStep, Phase::kOptimizer, kNoLayer};
  graph.add_compute(step, ComputeKind::kOptimizer, 0, 0, Time::zero(), deps);
  const Program p = graph.take_program();
  const auto got = p.deps_of(p.ops.back());
  EXPECT_EQ(std::vector<OpIndex>(got.begin(), got.end()),
            std::vector<OpIndex>(deps.begin(), deps.begin() + 40));
}

TEST(OpGraphBuilder, LabelsOpsWithThePassAndNumbersCollectivesPerGroup) {
  OpGraphBuilder graph;
  graph.set_pass(7, 1);
  const OpLabel reduce{OpName::kTpAllReduce, Phase::kForward, 0};
  graph.add_collective(reduce, CollectiveKind::kAllReduce, Communicator::kTensor, ParallelDim::kTp,
                       64, {});
  graph.add_collective(reduce, CollectiveKind::kAllReduce, Communicator::kData, ParallelDim::kDp,
                       64, {});
  graph.add_collective(reduce, CollectiveKind::kAllReduce, Communicator::kTensor, ParallelDim::kTp,
                       64, {});
  const OpLabel activation{OpName::kPpActivation, Phase::kForward, kNoLayer};
  graph.add_receive(activation, Communicator::kPipeline, -1, 128, 42, {});
  const Program p = graph.take_program();
  EXPECT_EQ(p.ops[0].seq, 0u);
  EXPECT_EQ(p.ops[1].seq, 0u);
  EXPECT_EQ(p.ops[2].seq, 1u);
  EXPECT_EQ(p.ops[0].stream, Stream::kTp);
  EXPECT_EQ(p.ops[1].stream, Stream::kDp);
  EXPECT_EQ(p.ops[3].stream, Stream::kPpRecv);
  EXPECT_EQ(p.ops[3].seq, 42u);
  EXPECT_EQ(p.ops[3].peer_offset, -1);
  for (const Op& op : p.ops) {
    EXPECT_EQ(op.micro_batch, 7);
    EXPECT_EQ(op.chunk, 1);
  }
}

TEST(OpGraphBuilder, ADependencyOnALaterOperationIsABug) {
  OpGraphBuilder graph;
  add_kernel(graph, {});
  EXPECT_THROW(add_kernel(graph, {1}), std::logic_error);
  EXPECT_THROW(add_kernel(graph, {5}), std::logic_error);
  // Nothing was added by the failed calls.
  EXPECT_EQ(graph.last_op(), 0u);
  EXPECT_EQ(graph.take_program().deps.size(), 0u);
}

TEST(OpGraphBuilder, MoreDependenciesThanAnOpCanCountIsAnInputError) {
  // dep_count is 16 bits: 65,535 dependencies fit, 65,536 do not (the count used to be capped
  // while every dependency was stored).
  OpGraphBuilder graph;
  std::vector<OpIndex> deps;
  for (std::size_t i = 0; i <= OpGraphBuilder::kMaxDependencies; ++i)
    deps.push_back(add_kernel(graph, {}));
  const OpLabel step{OpName::kOptimizerStep, Phase::kOptimizer, kNoLayer};
  const std::span<const OpIndex> fits(deps.data(), OpGraphBuilder::kMaxDependencies);
  EXPECT_NO_THROW(graph.add_compute(step, ComputeKind::kOptimizer, 0, 0, Time::zero(), fits));
  try {
    graph.add_compute(step, ComputeKind::kOptimizer, 0, 0, Time::zero(), deps);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("would wait for more than the 65535 operations"),
              std::string::npos)
        << e.what();
  }
}

TEST(OpGraphBuilder, LayersChunksAndTagsBeyondTheirFieldsAreInputErrors) {
  OpGraphBuilder graph;
  const OpLabel deep{OpName::kQkv, Phase::kForward, OpGraphBuilder::kMaxLayer + 1};
  EXPECT_THROW(graph.add_compute(deep, ComputeKind::kGemm, 0, 0, Time::zero(), {}), InputError);
  EXPECT_NO_THROW(graph.set_pass(0, OpGraphBuilder::kMaxChunk));
  EXPECT_THROW(graph.set_pass(0, OpGraphBuilder::kMaxChunk + 1), InputError);
  const OpLabel activation{OpName::kPpActivation, Phase::kForward, kNoLayer};
  EXPECT_THROW(
      graph.add_send(activation, Communicator::kPipeline, 1, 8, OpGraphBuilder::kMaxTag + 1, {}),
      InputError);
  EXPECT_THROW(graph.add_send(activation, Communicator::kTensor, 1, 8, 0, {}), std::logic_error);
  EXPECT_EQ(graph.last_op(), kNoOp);
}

}  // namespace
}  // namespace stepsim::workloads
