// The attention core with context parallelism: ring attention's cp blocks and cp - 1 key/value
// exchanges, Ulysses' two all-to-alls, against their closed forms.
#include <gtest/gtest.h>

#include <string>

#include "tests/workloads/workload_of.hpp"
#include "workloads/context_parallel_attention.hpp"

namespace stepsim::workloads {
namespace {

// h = 1024 with 16 heads of 64 and as many KV heads: q, kv and output widths are all 1024.
WorkloadSpec spec_of(const std::string& parallelism) {
  return workload_of("{layers: 2, hidden: 1024, heads: 16, vocab: 32000, ffn: 4096}", parallelism,
                     "{seq_len: 4096, micro_batch: 1, global_batch: 1}");
}

struct Core {
  Program program;
  OpIndex result = kNoOp;
};

Core emit(const WorkloadSpec& spec, Phase phase, const OpCost& cost, int calls = 1) {
  OpGraphBuilder graph;
  StageCompute compute(spec, graph, false);
  ContextParallelAttention attention(spec, micro_batch_shape(spec), graph, compute);
  const OpIndex qkv =
      graph.add_compute({OpName::kQkv, phase, 0}, ComputeKind::kGemm, 0, 0, Time::zero(), {});
  Core c;
  for (int i = 0; i < calls; ++i)
    c.result = attention.core(phase, 0, cost, qkv, kNoOp);
  c.program = graph.take_program();
  return c;
}

TEST(ContextParallelAttention, WithoutContextParallelismTheCoreIsOneOperation) {
  const auto spec = spec_of("{}");
  const Core c = emit(spec, Phase::kForward, {8e9, 4e6});
  ASSERT_EQ(c.program.ops.size(), 2u);
  EXPECT_EQ(c.program.ops[1].name, OpName::kAttentionCore);
  EXPECT_DOUBLE_EQ(c.program.ops[1].flops, 8e9);
  EXPECT_EQ(c.result, 1u);
}

TEST(ContextParallelAttention, RingRunsCpBlocksAndCpMinusOneKvExchanges) {
  // cp 4: T = 4096 / 4 = 1024 tokens per rank; each exchange carries the keys and values of a
  // block, T x (kv width + output width) x 2 bytes = 1024 x 2048 x 2; the backward twice that.
  const auto spec = spec_of("{cp: 4}");
  for (const Phase phase : {Phase::kForward, Phase::kBackward}) {
    const std::int64_t kv_bytes = 1024 * 2048 * 2 * (phase == Phase::kBackward ? 2 : 1);
    const Core c = emit(spec, phase, {8e9, 4e6}, 2);
    int blocks = 0;
    int sends = 0;
    int receives = 0;
    std::uint32_t next_tag = 0;
    for (const Op& op : c.program.ops) {
      if (op.name == OpName::kAttentionCore) {
        ++blocks;
        EXPECT_DOUBLE_EQ(op.flops, 2e9);  // a quarter of the core each
        EXPECT_DOUBLE_EQ(static_cast<double>(op.bytes), 1e6);
      } else if (op.kind == OpKind::kSend || op.kind == OpKind::kRecv) {
        EXPECT_EQ(op.name, OpName::kCpKvExchange);
        EXPECT_EQ(op.group, Communicator::kContext);
        EXPECT_EQ(op.bytes, kv_bytes);
        EXPECT_EQ(op.peer_offset, op.kind == OpKind::kSend ? 1 : -1);
        if (op.kind == OpKind::kSend) {
          EXPECT_EQ(op.seq, next_tag++);  // a new tag per exchange, across calls
          ++sends;
        } else {
          ++receives;
        }
      }
    }
    EXPECT_EQ(blocks, 2 * 4);
    EXPECT_EQ(sends, 2 * 3);
    EXPECT_EQ(receives, 2 * 3);
    EXPECT_EQ(c.program.ops[c.result].name, OpName::kAttentionCore);
  }
}

TEST(ContextParallelAttention, UlyssesSurroundsTheCoreWithTwoAllToAlls) {
  // Forward: q, k, v and the output's width in, T x 3072 x 2 bytes; the output out,
  // T x 1024 x 2; the backward the other way round.
  const auto spec = spec_of("{cp: 4, cp_mode: ulysses}");
  const std::int64_t in_bytes = 1024 * 3072 * 2;
  const std::int64_t out_bytes = 1024 * 1024 * 2;
  for (const Phase phase : {Phase::kForward, Phase::kBackward}) {
    const Core c = emit(spec, phase, {8e9, 4e6});
    ASSERT_EQ(c.program.ops.size(), 4u);
    const Op& before = c.program.ops[1];
    const Op& core = c.program.ops[2];
    const Op& after = c.program.ops[3];
    const bool backward = phase == Phase::kBackward;
    EXPECT_EQ(before.collective, CollectiveKind::kAllToAll);
    EXPECT_EQ(before.group, Communicator::kContext);
    EXPECT_EQ(before.bytes, backward ? out_bytes : in_bytes);
    EXPECT_EQ(core.name, OpName::kAttentionCore);
    EXPECT_DOUBLE_EQ(core.flops, 8e9);  // one operation of the whole cost
    EXPECT_EQ(after.collective, CollectiveKind::kAllToAll);
    EXPECT_EQ(after.bytes, backward ? in_bytes : out_bytes);
    EXPECT_EQ(c.result, 3u);
  }
}

}  // namespace
}  // namespace stepsim::workloads
