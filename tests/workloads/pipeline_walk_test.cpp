// The pipeline walk: every (micro-batch, chunk) of a stage once forward and once backward, over
// the chunk's layers, with transfer tags that pair each send with the neighbouring stage's
// receive, and gradients reduced in the last backward of each chunk only.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "tests/workloads/workload_of.hpp"
#include "workloads/pipeline_walk.hpp"

namespace stepsim::workloads {
namespace {

WorkloadSpec spec_of(const std::string& parallelism, const std::string& training) {
  return workload_of("{layers: 10, hidden: 1024, heads: 16, vocab: 32000, ffn: 4096}", parallelism,
                     training);
}

TEST(PipelineWalk, ChunksCoverTheirLayersAndReduceGradientsOnce) {
  // 10 layers over pp 2 x vpp 2 = 4 virtual stages: 3, 3, 2, 2 layers. Stage 1 holds virtual
  // stages 1 (layers 3..5) and 3 (layers 8..9).
  const auto spec = spec_of("{pp: 2, vpp: 2, dp: 2}", "{seq_len: 1024, global_batch: 8}");
  const auto passes = pipeline_walk(spec, 1);
  ASSERT_EQ(passes.size(), 2u * 4 * 2);  // m = 4 micro-batches, 2 chunks, forward and backward
  int reducing = 0;
  for (const StagePass& pass : passes) {
    EXPECT_EQ(pass.virtual_stage, pass.chunk * 2 + 1);
    EXPECT_EQ(pass.layer_begin, pass.chunk == 0 ? 3 : 8);
    EXPECT_EQ(pass.layer_end, pass.chunk == 0 ? 6 : 10);
    if (pass.reduces_gradients) {
      ++reducing;
      EXPECT_FALSE(pass.forward);
    }
  }
  EXPECT_EQ(reducing, 2);  // one per chunk
  // The last virtual stage runs the output layer: its forward sends nothing, its backward
  // receives nothing.
  for (const StagePass& pass : passes) {
    if (pass.chunk == 1) {
      EXPECT_EQ(pass.sends(), !pass.forward);
      EXPECT_EQ(pass.receives(), pass.forward);
    }
  }
}

TEST(PipelineWalk, EverySendMatchesOneReceiveOfTheNeighbouringStage) {
  // Collects (tag, direction) of sends and receives over all stages: each tag is sent once and
  // received once, and a forward send of virtual stage v is received by virtual stage v + 1.
  for (const char* parallelism : {"{pp: 4}", "{pp: 2, vpp: 2}", "{pp: 4, schedule: gpipe}"}) {
    const auto spec = spec_of(parallelism, "{seq_len: 1024, global_batch: 8}");
    std::map<std::int64_t, int> sent_from;
    std::map<std::int64_t, int> received_by;
    for (int stage = 0; stage < spec.parallel.pp; ++stage) {
      for (const StagePass& pass : pipeline_walk(spec, stage)) {
        if (pass.sends()) {
          EXPECT_TRUE(sent_from.emplace(pass.send_tag(), pass.virtual_stage).second);
        }
        if (pass.receives()) {
          EXPECT_TRUE(received_by.emplace(pass.receive_tag(), pass.virtual_stage).second);
        }
      }
    }
    ASSERT_EQ(sent_from.size(), received_by.size()) << parallelism;
    for (const auto& [tag, from] : sent_from) {
      ASSERT_TRUE(received_by.contains(tag)) << parallelism << " tag " << tag;
      const bool backward = tag % 2 == 1;
      EXPECT_EQ(received_by[tag], from + (backward ? -1 : 1)) << parallelism << " tag " << tag;
    }
  }
}

}  // namespace
}  // namespace stepsim::workloads
