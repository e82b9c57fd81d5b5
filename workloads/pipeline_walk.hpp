// The passes one pipeline stage runs in a training step, in the order of its schedule
// (pipeline_order): each the forward or backward of one micro-batch through one model chunk, with
// the layers it covers, the pipeline transfers that open and close it, and whether its
// gradients are reduced.
//
// The model's layers are split into virtual stages, in model order (layers_per_virtual_stage):
// pp x vpp of them, chunk c of stage s being virtual stage c x pp + s; under DualPipe pp of them,
// chunk 0 of stage s being virtual stage s and chunk 1 virtual stage pp - 1 - s
// (pipeline_schedule.hpp). A forward pass
// receives its input activation from the previous virtual stage (or runs the embedding on the
// first) and sends its output to the next (or runs the output layer on the last); a backward pass
// receives the output gradient from the next virtual stage (or starts from the loss) and sends
// the input gradient to the previous one (or ends in the embedding).
#pragma once

#include <cstdint>
#include <vector>

#include "workloads/workload_spec.hpp"

namespace stepsim::workloads {

struct StagePass {
  bool forward = true;
  std::int32_t micro_batch = 0;
  int chunk = 0;                 // model chunk on this rank
  int virtual_stage = 0;         // chunk x pp + stage
  int virtual_stages = 1;        // pp x vpp
  std::int64_t layer_begin = 0;  // the chunk's global layers: [layer_begin, layer_end)
  std::int64_t layer_end = 0;
  // Backward: the last backward pass of its chunk in the step, the one whose gradients are
  // reduced (the others accumulate locally: no_sync). Under DualPipe, the last pass of the chunk
  // that computes weight gradients (a backward that does not defer them, or a weight step).
  bool reduces_gradients = false;
  // DualPipe (PipelineStep): a backward computing input gradients only, a weight step (forward
  // false) completing such a backward, and a forward overlapped with the backward after it.
  bool defers_weights = false;
  bool weights_only = false;
  bool overlapped = false;
  bool send_after_next = false;
  // Rank offset to the next virtual stage (+1; -1 for DualPipe's second chunk).
  int downstream = 1;

  bool first_virtual_stage() const { return virtual_stage == 0; }
  bool last_virtual_stage() const { return virtual_stage == virtual_stages - 1; }
  // Whether the pass starts with a receive from a neighbouring virtual stage (else it starts
  // with the embedding or the loss), and whether it ends with a send.
  // A weight step neither receives nor sends.
  bool receives() const {
    return !weights_only && (forward ? !first_virtual_stage() : !last_virtual_stage());
  }
  bool sends() const {
    return !weights_only && (forward ? !last_virtual_stage() : !first_virtual_stage());
  }
  // The tags of those transfers. One tag per micro-batch, boundary between virtual stages and
  // direction, so that a send matches exactly one receive.
  std::int64_t receive_tag() const;
  std::int64_t send_tag() const;

 private:
  std::int64_t tag(int boundary) const;
};

// The passes of pipeline stage `stage` (0-based) of a valid layout (from parse_workload).
std::vector<StagePass> pipeline_walk(const WorkloadSpec& spec, int stage);

}  // namespace stepsim::workloads
