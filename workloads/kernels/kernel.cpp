#include "workloads/kernels/kernel.hpp"

namespace stepsim::workloads::kernels {

std::string_view to_string(KernelKind k) {
  switch (k) {
    case KernelKind::kGemm:
      return "gemm";
    case KernelKind::kGroupedGemm:
      return "grouped_gemm";
    case KernelKind::kAttention:
      return "attention";
    case KernelKind::kMemory:
      return "memory";
  }
  return "?";
}

std::string_view to_string(KernelPass p) {
  switch (p) {
    case KernelPass::kForward:
      return "fwd";
    case KernelPass::kBackward:
      return "bwd";
    case KernelPass::kBackwardInput:
      return "bwd_input";
    case KernelPass::kBackwardWeight:
      return "bwd_weight";
  }
  return "?";
}

std::string_view to_string(MemoryKind k) {
  switch (k) {
    case MemoryKind::kLayerNorm:
      return "layer_norm";
    case MemoryKind::kRmsNorm:
      return "rms_norm";
    case MemoryKind::kActivation:
      return "activation";
    case MemoryKind::kDropout:
      return "dropout";
    case MemoryKind::kElementwise:
      return "elementwise";
    case MemoryKind::kSoftmax:
      return "softmax";
    case MemoryKind::kCrossEntropy:
      return "cross_entropy";
    case MemoryKind::kEmbedding:
      return "embedding";
    case MemoryKind::kOptimizer:
      return "optimizer";
    case MemoryKind::kCast:
      return "cast";
    case MemoryKind::kCount:
      break;
  }
  return "?";
}

double Kernel::flops(KernelPass pass) const {
  switch (kind) {
    case KernelKind::kGemm:
    case KernelKind::kGroupedGemm:
      return pass == KernelPass::kForward || pass == KernelPass::kBackwardInput ||
                     pass == KernelPass::kBackwardWeight
                 ? gemm.flops()
                 : 2.0 * gemm.flops();
    case KernelKind::kAttention:
      if (pass == KernelPass::kForward) return attention.forward_flops();
      return pass == KernelPass::kBackwardWeight ? 0.0 : 2.5 * attention.forward_flops();
    case KernelKind::kMemory:
      return 0.0;
  }
  return 0.0;
}

int Kernel::launches(KernelPass pass) const {
  switch (kind) {
    case KernelKind::kGemm:
    case KernelKind::kGroupedGemm:
      switch (pass) {
        case KernelPass::kForward:
          return forward_splits;
        case KernelPass::kBackward:
          return dgrad_splits + 1;
        case KernelPass::kBackwardInput:
          return dgrad_splits;
        case KernelPass::kBackwardWeight:
          return 1;
      }
      return 1;
    case KernelKind::kAttention:
      return pass == KernelPass::kBackwardWeight ? 0 : 1;
    case KernelKind::kMemory:
      if (pass == KernelPass::kForward) return forward_bytes > 0 ? 1 : 0;
      if (pass == KernelPass::kBackwardWeight) return 0;
      return backward_bytes > 0 ? 1 : 0;
  }
  return 0;
}

}  // namespace stepsim::workloads::kernels
