// The pass walker: passes in schedule order, each operation labelled with its pass, the
// optimizer last; DualPipe's interleaving reorders a pair's operations without adding or losing
// any; an inference server's forward pass.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "tests/workloads/workload_of.hpp"
#include "workloads/pipeline_walk.hpp"
#include "workloads/step_generator.hpp"

namespace stepsim::workloads {
namespace {

const char* kDense = "{layers: 4, hidden: 1024, heads: 16, vocab: 32000, ffn: 4096}";

TEST(StagePassWalker, ComputesThePassesInScheduleOrderAndTheOptimizerLast) {
  const auto spec = workload_of(kDense, "{pp: 2}",
                                "{seq_len: 1024, micro_batch: 1, "
                                "global_batch: 4}");
  for (int stage = 0; stage < 2; ++stage) {
    std::vector<std::pair<std::int32_t, bool>> expected;
    for (const StagePass& pass : pipeline_walk(spec, stage))
      expected.emplace_back(pass.micro_batch, pass.forward);
    const Program p = generate_stage_program(spec, stage);
    std::vector<std::pair<std::int32_t, bool>> seen;
    for (const Op& op : p.ops) {
      if (op.kind != OpKind::kCompute || op.phase == Phase::kOptimizer) continue;
      const std::pair<std::int32_t, bool> pass{op.micro_batch, op.phase == Phase::kForward};
      if (seen.empty() || seen.back() != pass) seen.push_back(pass);
    }
    EXPECT_EQ(seen, expected) << stage;
    EXPECT_EQ(p.ops.back().name, OpName::kOptimizerStep);
    EXPECT_EQ(p.ops.back().micro_batch, kNoMicroBatch);
  }
}

// What an operation is and moves, without where it sits in the program or how long it takes.
using OpKey = std::tuple<OpName, Phase, std::int32_t, std::int16_t, std::uint8_t, std::int64_t>;

std::vector<OpKey> sorted_keys(const Program& p) {
  std::vector<OpKey> keys;
  for (const Op& op : p.ops)
    keys.emplace_back(op.name, op.phase, op.micro_batch, op.layer, op.chunk, op.bytes);
  std::sort(keys.begin(), keys.end());
  return keys;
}

TEST(StagePassWalker, DualPipeInterleavingReordersButKeepsEveryOperation) {
  const std::string moe =
      "{layers: 4, hidden: 1024, heads: 16, vocab: 32000, ffn: 4096, gated_mlp: true,\n"
      " moe: {experts: 8, top_k: 2, expert_ffn: 2048, dense_layers: 1}}";
  const std::string training = "{seq_len: 1024, micro_batch: 1, global_batch: 16}";
  const auto overlapped = workload_of(moe, "{pp: 2, ep: 2, dp: 2, schedule: dualpipe}", training);
  const auto serial = workload_of(
      moe, "{pp: 2, ep: 2, dp: 2, schedule: dualpipe, dualpipe_overlap: false}", training);
  for (int stage = 0; stage < 2; ++stage) {
    const Program a = generate_stage_program(overlapped, stage);
    const Program b = generate_stage_program(serial, stage);
    EXPECT_EQ(sorted_keys(a), sorted_keys(b)) << stage;
    std::vector<OpName> order_a;
    std::vector<OpName> order_b;
    for (const Op& op : a.ops)
      order_a.push_back(op.name);
    for (const Op& op : b.ops)
      order_b.push_back(op.name);
    EXPECT_NE(order_a, order_b) << stage;
  }
}

TEST(StagePassWalker, AServersForwardPassHasNoLossBackwardOrOptimizer) {
  const auto spec = workload_of(kDense, "{tp: 2}",
                                "{seq_len: 1024, micro_batch: 1, "
                                "global_batch: 1}");
  ForwardPass pass;
  pass.shape = micro_batch_shape(spec);
  const Program p = generate_forward_program(spec, pass);
  int layers_seen = 0;
  for (const Op& op : p.ops) {
    EXPECT_EQ(op.phase, Phase::kForward);
    EXPECT_NE(op.name, OpName::kLoss);
    EXPECT_EQ(op.micro_batch, 0);
    if (op.name == OpName::kQkv) ++layers_seen;
  }
  EXPECT_EQ(layers_seen, 4);
  EXPECT_EQ(p.ops.front().name, OpName::kEmbedding);
  EXPECT_EQ(p.ops.back().name, OpName::kLogits);
}

}  // namespace
}  // namespace stepsim::workloads
