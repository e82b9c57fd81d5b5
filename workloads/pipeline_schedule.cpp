#include "workloads/pipeline_schedule.hpp"

#include <algorithm>
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

}  // namespace

std::vector<PipelineStep> pipeline_order(PipelineSchedule schedule, int pp, int stage, int vpp,
                                         std::int64_t micro_batches) {
  switch (schedule) {
    case PipelineSchedule::kGpipe:
      return gpipe(micro_batches);
    case PipelineSchedule::kOneFOneB:
      return one_f_one_b(pp, stage, micro_batches);
    case PipelineSchedule::kInterleaved:
      return interleaved(pp, stage, vpp, micro_batches);
  }
  throw std::logic_error("unknown pipeline schedule");
}

}  // namespace stepsim::workloads
