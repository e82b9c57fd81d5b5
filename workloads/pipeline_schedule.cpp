#include "workloads/pipeline_schedule.hpp"

#include <algorithm>
#include <array>
#include <deque>
#include <stdexcept>

namespace stepsim::workloads {

namespace {

std::vector<PipelineStep> gpipe(std::int64_t m) {
  std::vector<PipelineStep> steps;
  for (std::int64_t i = 0; i < m; ++i)
    steps.push_back({true, static_cast<std::int32_t>(i), 0});
  for (std::int64_t i = 0; i < m; ++i)
    steps.push_back({false, static_cast<std::int32_t>(i), 0});
  return steps;
}

std::vector<PipelineStep> one_f_one_b(int pp, int stage, std::int64_t m) {
  const std::int64_t warmup = std::min<std::int64_t>(pp - stage - 1, m);
  const std::int64_t remaining = m - warmup;
  std::vector<PipelineStep> steps;
  std::int32_t next_forward = 0;
  std::int32_t next_backward = 0;
  for (std::int64_t i = 0; i < warmup; ++i)
    steps.push_back({true, next_forward++, 0});
  for (std::int64_t i = 0; i < remaining; ++i) {
    steps.push_back({true, next_forward++, 0});
    steps.push_back({false, next_backward++, 0});
  }
  for (std::int64_t i = 0; i < warmup; ++i)
    steps.push_back({false, next_backward++, 0});
  return steps;
}

// Megatron-LM schedules.py: get_model_chunk_id and get_microbatch_id_in_model_chunk with the
// default microbatch_group_size_per_vp_stage = pp.
PipelineStep interleaved_step(std::int64_t k, bool forward, int pp, int vpp) {
  const std::int64_t group = static_cast<std::int64_t>(pp) * vpp;
  std::int64_t chunk = (k % group) / pp;
  if (!forward) chunk = vpp - 1 - chunk;
  const std::int64_t micro_batch = (k / group) * pp + k % pp;
  return {forward, static_cast<std::int32_t>(micro_batch), static_cast<std::int32_t>(chunk)};
}

std::vector<PipelineStep> interleaved(int pp, int stage, int vpp, std::int64_t m) {
  if (m % pp != 0) throw std::logic_error("interleaved schedule needs micro-batches % pp == 0");
  const std::int64_t total = m * vpp;
  std::int64_t warmup = 0;
  if (m == pp) {
    warmup = total;
  } else {
    warmup = std::min<std::int64_t>(
        static_cast<std::int64_t>(pp - stage - 1) * 2 + static_cast<std::int64_t>(vpp - 1) * pp,
        total);
  }
  const std::int64_t remaining = total - warmup;
  std::vector<PipelineStep> steps;
  for (std::int64_t k = 0; k < warmup; ++k)
    steps.push_back(interleaved_step(k, true, pp, vpp));
  for (std::int64_t k = 0; k < remaining; ++k) {
    steps.push_back(interleaved_step(k + warmup, true, pp, vpp));
    steps.push_back(interleaved_step(k, false, pp, vpp));
  }
  for (std::int64_t k = remaining; k < total; ++k) {
    steps.push_back(interleaved_step(k, false, pp, vpp));
  }
  return steps;
}

// deepseek-ai/DualPipe, dualpipe.py, DualPipe.step: the same eight phases, with its "phase"
// (which of the rank's two chunks) turned into a direction: ranks in the second half hold the
// reverse direction's stage as their first chunk.
class DualPipeOrder {
 public:
  DualPipeOrder(int pp, int stage, std::int64_t m) : half_(m / 2), second_half_(stage >= pp / 2) {}

  // A forward of the rank's chunk `phase` (0 or 1, as in dualpipe.py).
  void forward(int phase, bool overlapped = false, bool send_after_next = false) {
    const int d = direction(phase);
    PipelineStep step{true, micro_batch(d, next_forward_[d]++), d};
    step.overlapped = overlapped;
    step.send_after_next = overlapped || send_after_next;
    steps_.push_back(step);
  }
  void backward(int phase, bool zero_bubble = false) {
    const int d = direction(phase);
    PipelineStep step{false, micro_batch(d, next_backward_[d]++), d};
    step.defers_weights = zero_bubble;
    steps_.push_back(step);
    if (zero_bubble) deferred_.push_back(step);
  }
  void weights() {
    if (deferred_.empty()) throw std::logic_error("DualPipe: a weight step without a backward");
    PipelineStep step = deferred_.front();
    deferred_.pop_front();
    step.defers_weights = false;
    step.weights_only = true;
    steps_.push_back(step);
  }
  // dualpipe.py's _forward_backward_chunk: the forward overlapped with the backward.
  void forward_backward(int forward_phase, int backward_phase) {
    forward(forward_phase, true);
    backward(backward_phase);
  }
  std::vector<PipelineStep> take() {
    if (!deferred_.empty()) throw std::logic_error("DualPipe: weight steps left over");
    return std::move(steps_);
  }

 private:
  int direction(int phase) const { return phase ^ (second_half_ ? 1 : 0); }
  std::int32_t micro_batch(int direction, std::int64_t index) const {
    return static_cast<std::int32_t>(direction * half_ + index);
  }

  std::int64_t half_;
  bool second_half_;
  std::array<std::int64_t, 2> next_forward_{};
  std::array<std::int64_t, 2> next_backward_{};
  std::deque<PipelineStep> deferred_;
  std::vector<PipelineStep> steps_;
};

std::vector<PipelineStep> dualpipe(int pp, int stage, std::int64_t m) {
  if (pp % 2 != 0 || m % 2 != 0 || m < 2 * pp)
    throw std::logic_error("DualPipe needs an even pp and an even m >= 2 pp");
  const int half_ranks = pp / 2;
  const int half_rank = std::min(stage, pp - 1 - stage);
  const bool middle = stage == half_ranks - 1 || stage == half_ranks;
  const std::int64_t half = m / 2;
  DualPipeOrder o(pp, stage, m);
  // 1: nF0
  for (int i = 0; i < (half_ranks - half_rank - 1) * 2; ++i)
    o.forward(0);
  // 2: nF0F1. Outside the middle ranks the first chunk's output leaves with the second's; the
  // middle ranks hold their last output of the second chunk until the next forward.
  for (int i = 0; i <= half_rank; ++i) {
    o.forward(0, false, !middle);
    o.forward(1, false, middle && i == half_rank);
  }
  // 3: nB1W1F1, zero bubble
  for (int i = 0; i < half_ranks - half_rank - 1; ++i) {
    o.backward(1, true);
    o.weights();
    o.forward(1);
  }
  // 4, the main phase: nF0B1F1B0 (the middle ranks run their first pair apart)
  for (std::int64_t i = 0; i < half - pp + half_rank + 1; ++i) {
    if (i == 0 && middle) {
      o.forward(0, false, true);
      o.backward(1);
    } else {
      o.forward_backward(0, 1);
    }
    o.forward_backward(1, 0);
  }
  // 5: nB1F1B0
  for (int i = 0; i < half_ranks - half_rank - 1; ++i) {
    o.backward(1);
    o.forward_backward(1, 0);
  }
  // 6: nB1B0, the second half of them zero bubble
  const int step6 = half_rank + 1;
  bool zero_bubble = false;
  for (int i = 0; i < step6; ++i) {
    if (i == step6 / 2 && half_rank % 2 == 1) zero_bubble = true;
    o.backward(1, zero_bubble);
    if (i == step6 / 2 && half_rank % 2 == 0) zero_bubble = true;
    o.backward(0, zero_bubble);
  }
  // 7: nWB0, zero bubble
  for (int i = 0; i < half_ranks - half_rank - 1; ++i) {
    o.weights();
    o.backward(0, true);
  }
  // 8: nW
  for (int i = 0; i < step6; ++i)
    o.weights();
  return o.take();
}

}  // namespace

int chunks_per_rank(const ParallelLayout& layout) {
  return layout.schedule == PipelineSchedule::kDualPipe ? 2 : layout.vpp;
}

int virtual_stage_count(const ParallelLayout& layout) {
  return layout.schedule == PipelineSchedule::kDualPipe ? layout.pp : layout.pp * layout.vpp;
}

int virtual_stage_of(const ParallelLayout& layout, int stage, int chunk) {
  if (layout.schedule == PipelineSchedule::kDualPipe)
    return chunk == 0 ? stage : layout.pp - 1 - stage;
  return chunk * layout.pp + stage;
}

int downstream_offset(const ParallelLayout& layout, int chunk) {
  return layout.schedule == PipelineSchedule::kDualPipe && chunk == 1 ? -1 : 1;
}

std::vector<PipelineStep> pipeline_order(PipelineSchedule schedule, int pp, int stage, int vpp,
                                         std::int64_t micro_batches) {
  switch (schedule) {
    case PipelineSchedule::kGpipe:
      return gpipe(micro_batches);
    case PipelineSchedule::kOneFOneB:
      return one_f_one_b(pp, stage, micro_batches);
    case PipelineSchedule::kInterleaved:
      return interleaved(pp, stage, vpp, micro_batches);
    case PipelineSchedule::kDualPipe:
      return dualpipe(pp, stage, micro_batches);
  }
  throw std::logic_error("unknown pipeline schedule");
}

}  // namespace stepsim::workloads
