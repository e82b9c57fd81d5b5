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

// DualPipe steps: F forward (& when overlapped with the next backward), B backward, b backward of
// the input gradients only, W the weight step completing it; micro-batch.chunk.
std::string render_dualpipe(const std::vector<PipelineStep>& steps) {
  std::string out;
  for (const auto& s : steps) {
    if (!out.empty()) out += ' ';
    out += s.weights_only ? "W" : s.forward ? "F" : s.defers_weights ? "b" : "B";
    out += std::to_string(s.micro_batch) + "." + std::to_string(s.chunk);
    if (s.overlapped) out += "&";
  }
  return out;
}

TEST(PipelineSchedule, DualPipeFollowsTheEightPhasesOfDualpipePy) {
  // deepseek-ai/DualPipe dualpipe.py, p = 4, m = 8: micro-batches 0-3 enter at rank 0 (chunk 0),
  // 4-7 at rank 3 (chunk 1). Rank 0: (p/2 - 1) x 2 = 2 forwards of chunk 0, a forward of each,
  // one zero-bubble B/W/F triple on chunk 1 (its last stage), m/2 - p + 1 = 1 main iteration of
  // two overlapped pairs, then one B1 + pair, the B1 B0 drain and the deferred weights.
  EXPECT_EQ(render_dualpipe(pipeline_order(PipelineSchedule::kDualPipe, 4, 0, 1, 8)),
            "F0.0 F1.0 F2.0 F4.1 b4.1 W4.1 F5.1 F3.0& B5.1 F6.1& B0.0 B6.1 F7.1& B1.0 B7.1 b2.0 "
            "W2.0 b3.0 W3.0");
  // Rank 1, a middle rank: its first main-phase forward is not overlapped.
  EXPECT_EQ(render_dualpipe(pipeline_order(PipelineSchedule::kDualPipe, 4, 1, 1, 8)),
            "F0.0 F4.1 F1.0 F5.1 F2.0 B4.1 F6.1& B0.0 F3.0& B5.1 F7.1& B1.0 B6.1 B2.0 b7.1 b3.0 "
            "W7.1 W3.0");
}

TEST(PipelineSchedule, DualPipeRanksMirrorEachOther) {
  // Rank p - 1 - s runs rank s's schedule with the two directions swapped (chunk 0 <-> 1,
  // micro-batch k <-> k + m/2 mod m): the schedule is symmetric, as the report's figure 5 shows.
  const int p = 8;
  const std::int64_t m = 20;
  for (int s = 0; s < p; ++s) {
    auto mirrored = pipeline_order(PipelineSchedule::kDualPipe, p, p - 1 - s, 1, m);
    for (auto& step : mirrored) {
      step.chunk = 1 - step.chunk;
      step.micro_batch = static_cast<std::int32_t>((step.micro_batch + m / 2) % m);
    }
    EXPECT_EQ(render_dualpipe(mirrored),
              render_dualpipe(pipeline_order(PipelineSchedule::kDualPipe, p, s, 1, m)))
        << "rank " << s;
  }
}

TEST(PipelineSchedule, DualPipeRunsEveryMicroBatchOnceEachWayAndEveryDeferredWeightOnce) {
  for (const int p : {2, 4, 8, 16}) {
    for (const std::int64_t m : {2 * p, 2 * p + 2, 6 * p}) {
      for (int stage = 0; stage < p; ++stage) {
        std::set<std::pair<int, int>> forwarded, backwarded, deferred, weighted;
        for (const auto& s : pipeline_order(PipelineSchedule::kDualPipe, p, stage, 1, m)) {
          const std::pair<int, int> key{s.micro_batch, s.chunk};
          // Chunk 0 carries the first half of the micro-batches, chunk 1 the second.
          EXPECT_EQ(s.chunk, s.micro_batch < m / 2 ? 0 : 1);
          if (s.weights_only) {
            EXPECT_TRUE(deferred.count(key)) << "weights before their backward";
            EXPECT_TRUE(weighted.insert(key).second);
          } else if (s.forward) {
            EXPECT_TRUE(forwarded.insert(key).second);
          } else {
            EXPECT_TRUE(forwarded.count(key)) << "backward before forward";
            EXPECT_TRUE(backwarded.insert(key).second);
            if (s.defers_weights) deferred.insert(key);
          }
        }
        EXPECT_EQ(forwarded.size(), static_cast<std::size_t>(m));
        EXPECT_EQ(backwarded.size(), static_cast<std::size_t>(m));
        EXPECT_EQ(weighted, deferred);
      }
    }
  }
}

TEST(PipelineSchedule, DualPipePlacesBothDirectionsOnMirroredStages) {
  ParallelLayout layout;
  layout.pp = 8;
  layout.schedule = PipelineSchedule::kDualPipe;
  EXPECT_EQ(chunks_per_rank(layout), 2);
  EXPECT_EQ(virtual_stage_count(layout), 8);
  EXPECT_EQ(virtual_stage_of(layout, 1, 0), 1);
  EXPECT_EQ(virtual_stage_of(layout, 1, 1), 6);
  EXPECT_EQ(downstream_offset(layout, 0), 1);
  EXPECT_EQ(downstream_offset(layout, 1), -1);
}

}  // namespace
}  // namespace stepsim::workloads
