// The pipeline's sends and receives: each pass receives from one neighbouring virtual stage and
// sends to the other, the sequence-sharded b x s x h tensor per boundary and micro-batch each way.
#include <gtest/gtest.h>

#include <string>

#include "tests/workloads/workload_of.hpp"
#include "workloads/pipeline_transfers.hpp"
#include "workloads/step_generator.hpp"

namespace stepsim::workloads {
namespace {

constexpr std::int64_t kBytes = 1 << 20;

StagePass middle_pass(bool forward, int downstream) {
  StagePass pass;
  pass.forward = forward;
  pass.micro_batch = 2;
  pass.virtual_stage = 1;
  pass.virtual_stages = 4;
  pass.downstream = downstream;
  return pass;
}

OpIndex add_kernel(OpGraphBuilder& graph) {
  return graph.add_compute({OpName::kNorm, Phase::kForward, 0}, ComputeKind::kElementwise, 0, 0,
                           Time::zero(), {});
}

TEST(PipelineTransfers, AForwardReceivesFromUpstreamAndSendsDownstream) {
  for (const bool forward : {true, false}) {
    OpGraphBuilder graph;
    PipelineTransfers transfers(graph, kBytes);
    const StagePass pass = middle_pass(forward, +1);
    const OpIndex in = transfers.receive(pass);
    const OpIndex out = add_kernel(graph);
    transfers.send(pass, {out, kNoOp});
    const Program p = graph.take_program();
    const Op& receive = p.ops[in];
    const Op& send = p.ops[2];
    EXPECT_EQ(receive.name, forward ? OpName::kPpActivation : OpName::kPpGradient);
    EXPECT_EQ(send.name, receive.name);
    EXPECT_EQ(receive.kind, OpKind::kRecv);
    EXPECT_EQ(send.kind, OpKind::kSend);
    // Forward: from the previous virtual stage to the next; backward the other way.
    EXPECT_EQ(receive.peer_offset, forward ? -1 : +1);
    EXPECT_EQ(send.peer_offset, forward ? +1 : -1);
    EXPECT_EQ(receive.seq, static_cast<std::uint32_t>(pass.receive_tag()));
    EXPECT_EQ(send.seq, static_cast<std::uint32_t>(pass.send_tag()));
    EXPECT_EQ(receive.bytes, kBytes);
    EXPECT_EQ(send.bytes, kBytes);
    EXPECT_EQ(receive.stream, Stream::kPpRecv);
    EXPECT_EQ(send.stream, Stream::kPp);
    ASSERT_EQ(send.dep_count, 1);
    EXPECT_EQ(p.deps_of(send)[0], out);
  }
}

TEST(PipelineTransfers, DualPipesSecondDirectionUsesTheReverseStreams) {
  OpGraphBuilder graph;
  PipelineTransfers transfers(graph, kBytes);
  const StagePass pass = middle_pass(true, -1);
  transfers.receive(pass);
  transfers.send(pass, {});
  const Program p = graph.take_program();
  EXPECT_EQ(p.ops[0].peer_offset, +1);
  EXPECT_EQ(p.ops[0].stream, Stream::kPpReverseRecv);
  EXPECT_EQ(p.ops[1].peer_offset, -1);
  EXPECT_EQ(p.ops[1].stream, Stream::kPpReverse);
}

TEST(PipelineTransfers, AHeldSendLeavesAfterTheNextPassWithItsOwnLabels) {
  OpGraphBuilder graph;
  PipelineTransfers transfers(graph, kBytes);
  const StagePass forward = middle_pass(true, +1);
  graph.set_pass(forward.micro_batch, 0);
  const OpIndex out = add_kernel(graph);
  transfers.hold(forward, {out, kNoOp});
  EXPECT_TRUE(transfers.holding());
  const auto held = transfers.take_held();
  ASSERT_TRUE(held.has_value());
  EXPECT_FALSE(transfers.holding());
  EXPECT_FALSE(transfers.take_held().has_value());
  graph.set_pass(7, 0);  // the next pass
  const OpIndex next = add_kernel(graph);
  transfers.send_held(*held, next);
  const Program p = graph.take_program();
  const Op& send = p.ops[2];
  EXPECT_EQ(send.micro_batch, forward.micro_batch);
  ASSERT_EQ(send.dep_count, 2);
  EXPECT_EQ(p.deps_of(send)[0], out);
  EXPECT_EQ(p.deps_of(send)[1], next);
}

TEST(PipelineTransfers, AStepSendsTheShardedActivationPerBoundaryAndMicroBatchEachWay) {
  // pp 4, tp 2 with sequence parallelism, 8 micro-batches of b = 2 sequences of s = 1024, h = 1024:
  // each transfer is b x s x h / tp elements of 2 bytes; a middle stage receives and sends one
  // activation and one gradient per micro-batch.
  const auto spec =
      workload_of("{layers: 8, hidden: 1024, heads: 16, vocab: 32000, ffn: 4096}",
                  "{pp: 4, tp: 2, sp: true}", "{seq_len: 1024, micro_batch: 2, global_batch: 16}");
  const std::int64_t bytes = 2 * 1024 * 1024 / 2 * 2;
  for (int stage = 0; stage < 4; ++stage) {
    const Program p = generate_stage_program(spec, stage);
    int sends = 0;
    int receives = 0;
    for (const Op& op : p.ops) {
      if (op.group != Communicator::kPipeline) continue;
      EXPECT_EQ(op.bytes, bytes);
      (op.kind == OpKind::kSend ? sends : receives) += 1;
    }
    const int boundaries = (stage > 0 ? 1 : 0) + (stage < 3 ? 1 : 0);
    EXPECT_EQ(sends, boundaries * 8) << stage;
    EXPECT_EQ(receives, boundaries * 8) << stage;
  }
}

}  // namespace
}  // namespace stepsim::workloads
