// The pipeline schedules issue micro-batches in the published orders.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "workloads/pipeline_schedule.hpp"

namespace stepsim::workloads {
namespace {

// "F0 B0 ..." with the chunk after a dot when interleaved ("F1.0": micro-batch 1, chunk 0).
std::string render(const std::vector<PipelineStep>& steps, bool chunks) {
  std::string out;
  for (const auto& s : steps) {
    if (!out.empty()) out += ' ';
    out += (s.forward ? "F" : "B") + std::to_string(s.micro_batch);
    if (chunks) out += "." + std::to_string(s.chunk);
  }
  return out;
}

TEST(PipelineSchedule, GpipeRunsAllForwardsThenAllBackwards) {
  EXPECT_EQ(render(pipeline_order(PipelineSchedule::kGpipe, 4, 1, 1, 4), false),
            "F0 F1 F2 F3 B0 B1 B2 B3");
}

TEST(PipelineSchedule, OneFOneBWarmsUpWithPMinusSMinusOneForwards) {
  // Megatron-LM forward_backward_pipelining_without_interleaving, p = 4, m = 8: stage s runs
  // p - s - 1 warm-up forwards, then 1F1B pairs, then the remaining backwards.
  EXPECT_EQ(render(pipeline_order(PipelineSchedule::kOneFOneB, 4, 0, 1, 8), false),
            "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7");
  EXPECT_EQ(render(pipeline_order(PipelineSchedule::kOneFOneB, 4, 2, 1, 8), false),
            "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 F6 B5 F7 B6 B7");
  EXPECT_EQ(render(pipeline_order(PipelineSchedule::kOneFOneB, 4, 3, 1, 8), false),
            "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7");
  // Fewer micro-batches than the warm-up: every forward, then every backward.
  EXPECT_EQ(render(pipeline_order(PipelineSchedule::kOneFOneB, 4, 0, 1, 2), false), "F0 F1 B0 B1");
}

TEST(PipelineSchedule, InterleavedFollowsMegatronChunkOrder) {
  // Megatron-LM forward_backward_pipelining_with_interleaving, p = 2, v = 2, m = 4. Stage 0:
  // warm-up (p - 0 - 1) x 2 + (v - 1) x p = 4 virtual micro-batches; chunk of virtual
  // micro-batch k = (k mod pv) / p (reversed for backward), micro-batch = (k / pv) p + k mod p.
  EXPECT_EQ(render(pipeline_order(PipelineSchedule::kInterleaved, 2, 0, 2, 4), true),
            "F0.0 F1.0 F0.1 F1.1 F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 F3.1 B1.0 B2.1 B3.1 B2.0 B3.0");
  // Stage 1: warm-up (2 - 1 - 1) x 2 + 1 x 2 = 2.
  EXPECT_EQ(render(pipeline_order(PipelineSchedule::kInterleaved, 2, 1, 2, 4), true),
            "F0.0 F1.0 F0.1 B0.1 F1.1 B1.1 F2.0 B0.0 F3.0 B1.0 F2.1 B2.1 F3.1 B3.1 B2.0 B3.0");
  // m == p: Megatron runs every forward first.
  EXPECT_EQ(render(pipeline_order(PipelineSchedule::kInterleaved, 2, 1, 2, 2), true),
            "F0.0 F1.0 F0.1 F1.1 B0.1 B1.1 B0.0 B1.0");
}

TEST(PipelineSchedule, EveryMicroBatchAndChunkRunsOnceEachWayForwardFirst) {
  for (auto sched :
       {PipelineSchedule::kGpipe, PipelineSchedule::kOneFOneB, PipelineSchedule::kInterleaved}) {
    const int vpp = sched == PipelineSchedule::kInterleaved ? 3 : 1;
    for (int stage = 0; stage < 4; ++stage) {
      std::set<std::pair<int, int>> forwarded;
      std::set<std::pair<int, int>> backwarded;
      const auto steps = pipeline_order(sched, 4, stage, vpp, 12);
      for (const auto& s : steps) {
        const std::pair<int, int> key{s.micro_batch, s.chunk};
        if (s.forward) {
          EXPECT_TRUE(forwarded.insert(key).second);
        } else {
          EXPECT_TRUE(forwarded.count(key)) << "backward before forward";
          EXPECT_TRUE(backwarded.insert(key).second);
        }
      }
      EXPECT_EQ(forwarded.size(), 12u * vpp);
      EXPECT_EQ(backwarded.size(), 12u * vpp);
    }
  }
}

}  // namespace
}  // namespace stepsim::workloads
