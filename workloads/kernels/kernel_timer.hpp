// Times the kernels of an operation on one device: GEMMs by the GEMM model (and its table),
// fused attention by the attention model, memory-bound kernels by their bytes at the achieved
// bandwidth of their kind, plus the cost of launching them:
//   operation = max(sum of kernel times + launches x gpu_per_kernel, launches x cpu_per_kernel)
// (the GPU's own gap between dependent kernels, or the host's eager launch rate when the
// kernels are shorter than it). docs/workloads.md, "Compute model", gives every rate's source.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/common/units.hpp"
#include "workloads/kernels/attention_model.hpp"
#include "workloads/kernels/gemm_model.hpp"
#include "workloads/kernels/kernel.hpp"

namespace stepsim::workloads::kernels {

// Achieved HBM bandwidth (bytes per second, bytes as Kernel::forward_bytes counts them) of each
// kind of memory-bound kernel, forward and backward.
struct MemoryRates {
  std::string source;
  bool calibrated = false;
  std::array<double, kMemoryKindCount> forward_bytes_per_s{};
  std::array<double, kMemoryKindCount> backward_bytes_per_s{};
};

struct LaunchCosts {
  Time gpu_per_kernel;  // back-to-back kernels on one stream, the GPU's own cost
  Time cpu_per_kernel;  // the host issuing eager launches (PyTorch) one after another
  std::string source;
};

// One kernel's time and what set it.
struct KernelTiming {
  Time time;
  double flops = 0;
  double bytes = 0;           // memory kernels; GEMMs: the operands' bytes
  bool memory_bound = false;  // the HBM side set the time
  std::string_view source;    // "gemm table", "gemm model", the attention kernel, "hbm rate"
};

class KernelTimer {
 public:
  KernelTimer(std::string device, GemmModel gemm, AttentionModel attention, MemoryRates memory,
              LaunchCosts launch);

  // The dtype of the linear layers' products (BF16, or FP8 under FP8 training; the attention's
  // batched products stay BF16).
  void set_linear_dtype(GemmDtype dtype) { linear_dtype_ = dtype; }
  GemmDtype linear_dtype() const { return linear_dtype_; }

  KernelTiming time(const Kernel& kernel, KernelPass pass) const;
  // The operation's time: its kernels one after another, with the launch costs above.
  Time operation_time(const std::vector<Kernel>& kernels, KernelPass pass) const;

  const std::string& device() const { return device_; }
  // Every part of the timer set from public kernel measurements of this device.
  bool calibrated() const;
  const GemmModel& gemm() const { return gemm_; }
  const AttentionModel& attention() const { return attention_; }
  const MemoryRates& memory() const { return memory_; }
  const LaunchCosts& launch() const { return launch_; }
  void set_launch(LaunchCosts launch) { launch_ = std::move(launch); }
  void set_gemm(GemmModel gemm) { gemm_ = std::move(gemm); }
  // Compute-bound GEMM times of `dtype` are multiplied by `scale`: the sustained clock of a GPU
  // busy for a whole step against the short runs the preset's GEMM tables time (1: sustained
  // already). A table given by the user (`table_is_sustained`) is taken as measured: only the
  // model's estimates outside it are scaled.
  void set_gemm_time_scale(GemmDtype dtype, double scale) {
    gemm_time_scale_[static_cast<std::size_t>(dtype)] = scale;
  }
  void set_gemm_time_scale_source(std::string source) {
    gemm_time_scale_source_ = std::move(source);
  }
  void set_table_is_sustained(bool sustained) { table_is_sustained_ = sustained; }
  double gemm_time_scale(GemmDtype dtype) const {
    return gemm_time_scale_[static_cast<std::size_t>(dtype)];
  }
  const std::string& gemm_time_scale_source() const { return gemm_time_scale_source_; }

 private:
  KernelTiming gemm_time(const GemmShape& shape, GemmDtype dtype) const;
  // The product as `splits` back-to-back GEMMs over slices of m (Kernel::forward_splits).
  KernelTiming split_gemm_time(const GemmShape& shape, GemmDtype dtype, int splits) const;
  std::string device_;
  GemmModel gemm_;
  AttentionModel attention_;
  MemoryRates memory_;
  LaunchCosts launch_;
  GemmDtype linear_dtype_ = GemmDtype::kBf16;
  std::array<double, 3> gemm_time_scale_{1.0, 1.0, 1.0};  // by GemmDtype
  std::string gemm_time_scale_source_;
  bool table_is_sustained_ = false;
};

// The timer of a device preset (a100, h100, h200, h800, b200, ascend-910c); nullopt otherwise.
std::optional<KernelTimer> kernel_timer_preset(std::string_view device);

}  // namespace stepsim::workloads::kernels
