// The order in which one pipeline rank runs the forward and backward passes of its micro-batches
// (and model chunks), as the published schedules issue them:
//  - GPipe: every forward, then every backward, both in micro-batch order
//    (torch.distributed.pipelining's ScheduleGPipe);
//  - 1F1B (PipeDream-Flush, Megatron-LM's forward_backward_pipelining_without_interleaving):
//    min(p - s - 1, m) warm-up forwards, then one forward / one backward pairs, then the
//    remaining backwards;
//  - interleaved 1F1B (Megatron-LM's forward_backward_pipelining_with_interleaving, Narayanan et
//    al. 2021): v model chunks per rank, warm-up (p - s - 1) x 2 + (v - 1) x p virtual
//    micro-batches (all of them when m == p), chunks advanced in groups of p micro-batches;
//  - DualPipe (DeepSeek-V3, arXiv 2412.19437 section 3.2.1; deepseek-ai/DualPipe's
//    dualpipe.py): the micro-batches are split in two halves fed from both ends of the pipeline.
//    Rank s holds two chunks, stage s of the direction fed at rank 0 (chunk 0, micro-batches
//    [0, m/2)) and stage p - 1 - s of the direction fed at rank p - 1 (chunk 1, [m/2, m)), hence
//    two copies of the parameters. Its eight phases: forwards of the first chunk, forwards of
//    both, zero-bubble backward/weight/forward triples, the main phase of overlapped forward and
//    backward pairs, and the drains, where some backwards compute only the input gradients and
//    leave their weight gradients to later weight steps (zero bubble, Qi et al. 2023).
#pragma once

#include <cstdint>
#include <vector>

#include "workloads/workload_spec.hpp"

namespace stepsim::workloads {

struct PipelineStep {
  bool forward = true;
  std::int32_t micro_batch = 0;
  std::int32_t chunk = 0;  // model chunk on this rank (0 unless interleaved or DualPipe)
  // DualPipe's zero-bubble split: a backward that computes the input gradients only and leaves
  // its weight gradients to a later weight step, and that weight step (forward false), which
  // names the backward it completes. Weight steps follow their backwards in order.
  bool defers_weights = false;
  bool weights_only = false;
  // A forward that DualPipe runs overlapped with the backward that follows it (an F&B chunk).
  bool overlapped = false;
  // A forward whose output DualPipe sends only after the next step has computed too (the
  // outputs of an F&B chunk leave together, and a few warm-up forwards wait for the next).
  bool send_after_next = false;
  bool operator==(const PipelineStep&) const = default;
};

// Model chunks on each pipeline rank: vpp, or 2 under DualPipe (one per direction).
int chunks_per_rank(const ParallelLayout& layout);
// Virtual stages the model's layers are split into, in model order: pp x vpp, or pp under
// DualPipe (both directions run the same pp stages).
int virtual_stage_count(const ParallelLayout& layout);
// The virtual stage of chunk `chunk` on pipeline rank `stage`: chunk x pp + stage; under DualPipe
// stage for chunk 0 and pp - 1 - stage for chunk 1.
int virtual_stage_of(const ParallelLayout& layout, int stage, int chunk);
// Rank offset from a chunk to the next virtual stage of its micro-batches: +1, or -1 for
// DualPipe's chunk 1 (its micro-batches run from rank pp - 1 down to rank 0).
int downstream_offset(const ParallelLayout& layout, int chunk);

// The steps of pipeline rank `stage` (0-based) of `pp`, with `vpp` chunks per rank and
// `micro_batches` micro-batches. Every (micro-batch, chunk) appears once forward and once
// backward (and, under DualPipe, once as a weight step when its backward defers weights).
// Requires micro_batches % pp == 0 for the interleaved schedule, and pp even with
// micro_batches even and >= 2 pp for DualPipe (checked by parse_workload).
std::vector<PipelineStep> pipeline_order(PipelineSchedule schedule, int pp, int stage, int vpp,
                                         std::int64_t micro_batches);

}  // namespace stepsim::workloads
