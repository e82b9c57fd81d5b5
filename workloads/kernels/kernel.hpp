// One GPU kernel of a training step, as the compute model times it: a matrix product (dense or
// grouped), a fused attention kernel, or a memory-bound kernel (norms, activations, dropout,
// residual additions, casts, the optimizer) that moves a known number of HBM bytes.
//
// A compute operation of the step (workloads/operation.hpp: the QKV projection, a norm, the
// routed experts) runs a short list of these; workloads/layer_kernels.hpp builds the lists from
// the layer description, so that FLOPs, bytes and times come from one place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "workloads/kernels/gemm_model.hpp"

namespace stepsim::workloads::kernels {

enum class KernelKind : std::uint8_t { kGemm, kGroupedGemm, kAttention, kMemory };
std::string_view to_string(KernelKind k);

// Which part of a kernel's work an operation runs. The backward of a GEMM is two products:
// the input gradient (dgrad) and the weight gradient (wgrad); a zero-bubble schedule (DualPipe)
// runs them apart. Attention and memory-bound kernels run whole in kBackwardInput.
enum class KernelPass : std::uint8_t { kForward, kBackward, kBackwardInput, kBackwardWeight };
std::string_view to_string(KernelPass p);

// Scaled dot-product attention of `batch` sequences with `heads` query heads on this rank:
// queries of `seq_q` tokens against keys and values of `seq_kv` tokens.
struct AttentionShape {
  std::int64_t batch = 1;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;
  std::int64_t seq_q = 0;
  std::int64_t seq_kv = 0;
  std::int64_t head_dim_qk = 0;
  std::int64_t head_dim_v = 0;
  bool causal = true;
  // Forward FLOPs actually computed: 2 b h s_q s_kv (d_qk + d_v), halved under a causal mask
  // over a square score matrix (the kernels skip the masked blocks; FlashAttention's and
  // cuDNN's convention).
  double forward_flops() const;
};

// What a memory-bound kernel does, which sets its achieved bandwidth (KernelTimer's rates).
enum class MemoryKind : std::uint8_t {
  kLayerNorm,
  kRmsNorm,
  kActivation,   // GeLU, SwiGLU (fused, one kernel)
  kDropout,      // fused bias-dropout-add
  kElementwise,  // residual additions, rotary embeddings, copies
  kSoftmax,      // the unfused attention's scale-mask-softmax
  kCrossEntropy,
  kEmbedding,
  kOptimizer,  // fused Adam over FP32 master weights
  kCast,       // FP8 casts and transposes
  kCount
};
inline constexpr std::size_t kMemoryKindCount = static_cast<std::size_t>(MemoryKind::kCount);
std::string_view to_string(MemoryKind k);

struct Kernel {
  std::string_view name;  // "qkv", "layer_norm", "bias_dropout_add", ... (static strings)
  KernelKind kind = KernelKind::kMemory;
  // kGemm, kGroupedGemm: the forward product, out[m x n] = in[m x k] x weight[k x n] (m: tokens,
  // k: input features, n: output features; batch: groups of a grouped GEMM). Its backward is
  // dgrad (m x k from m x n and n x k) and wgrad (k x n from k x m and m x n).
  GemmShape gemm;
  // kGemm: the product runs in BF16 even under FP8 training (attention's batched products).
  bool bf16_only = false;
  // kGemm: the forward product and the dgrad run as this many back-to-back GEMMs over slices of
  // m, as Transformer Engine's userbuffers overlap (--tp-comm-overlap) splits a product to
  // overlap its tensor-parallel all-gather or reduce-scatter chunk by chunk (1: whole).
  int forward_splits = 1;
  int dgrad_splits = 1;
  AttentionShape attention;  // kAttention
  // kMemory: HBM bytes read and written by the forward kernel and by its backward (0: the
  // kernel has no backward, or its backward is another kernel's).
  double forward_bytes = 0;
  double backward_bytes = 0;
  MemoryKind memory = MemoryKind::kElementwise;

  // FLOPs of the pass (2 m n k per product; attention as AttentionShape; memory kernels 0).
  double flops(KernelPass pass) const;
  // Kernels launched by the pass: a GEMM's backward is two, its halves one each; a memory
  // kernel without backward bytes launches none in a backward.
  int launches(KernelPass pass) const;
};

}  // namespace stepsim::workloads::kernels
