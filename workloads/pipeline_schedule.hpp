// The order in which one pipeline rank runs the forward and backward passes of its micro-batches
// (and model chunks), as the published schedules issue them:
//  - GPipe: every forward, then every backward, both in micro-batch order
//    (torch.distributed.pipelining's ScheduleGPipe);
//  - 1F1B (PipeDream-Flush, Megatron-LM's forward_backward_pipelining_without_interleaving):
//    min(p - s - 1, m) warm-up forwards, then one forward / one backward pairs, then the
//    remaining backwards;
//  - interleaved 1F1B (Megatron-LM's forward_backward_pipelining_with_interleaving, Narayanan et
//    al. 2021): v model chunks per rank, warm-up (p - s - 1) x 2 + (v - 1) x p virtual
//    micro-batches (all of them when m == p), chunks advanced in groups of p micro-batches.
#pragma once

#include <cstdint>
#include <vector>

#include "workloads/workload_spec.hpp"

namespace stepsim::workloads {

struct PipelineStep {
  bool forward = true;
  std::int32_t micro_batch = 0;
  std::int32_t chunk = 0;  // model chunk on this rank (0 unless interleaved)
  bool operator==(const PipelineStep&) const = default;
};

// The steps of pipeline rank `stage` (0-based) of `pp`, with `vpp` chunks per rank and
// `micro_batches` micro-batches. Every (micro-batch, chunk) appears once forward and once
// backward. Requires micro_batches % pp == 0 for the interleaved schedule (checked by
// parse_workload).
std::vector<PipelineStep> pipeline_order(PipelineSchedule schedule, int pp, int stage, int vpp,
                                         std::int64_t micro_batches);

}  // namespace stepsim::workloads
