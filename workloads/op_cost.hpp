// The cost of one compute operation of a step: its FLOPs and HBM bytes (for reports and the
// roofline) and the kernels it runs (for the kernel-level compute model), in one value so that
// the two cannot drift apart.
#pragma once

#include <vector>

#include "workloads/kernels/kernel.hpp"

namespace stepsim::workloads {

struct OpCost {
  double flops = 0;  // floating-point operations
  double bytes = 0;  // bytes read and written in HBM
  // The forward kernels; `pass` says which part of them the operation runs. Empty: the
  // operation is timed by the roofline of `flops` and `bytes`.
  std::vector<kernels::Kernel> kernels = {};
  kernels::KernelPass pass = kernels::KernelPass::kForward;
};

// A backward operation computes the gradients of both the input and the weights: twice the
// forward's FLOPs and bytes, the same kernels' backward.
inline OpCost backward_cost(const OpCost& forward) {
  return {2.0 * forward.flops, 2.0 * forward.bytes, forward.kernels,
          kernels::KernelPass::kBackward};
}

// One half of a backward split in two (DualPipe's zero-bubble passes): the forward's FLOPs and
// bytes each, the kernels' input-gradient or weight-gradient part.
inline OpCost backward_part(const OpCost& forward, kernels::KernelPass part) {
  return {forward.flops, forward.bytes, forward.kernels, part};
}

}  // namespace stepsim::workloads
