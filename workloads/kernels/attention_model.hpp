// The time of a fused attention kernel (FlashAttention-2 on A100; cuDNN's fused attention, the
// one Transformer Engine picks on Hopper) from its shape, read off measured rates.
//
// A device's table holds the rate (FLOP/s, FLOPs as AttentionShape::forward_flops and 2.5 x that
// for the backward) of the forward and of the backward by head dimension, causal mask and
// sequence length, measured with enough sequences x heads to fill the GPU. A kernel's rate is
// the table's, interpolated linearly in log2(sequence) and in head dimension (clamped at the
// table's ends; below its shortest sequence the rate falls in proportion), times an occupancy
// factor for the rank's work units u = batch x heads x ceil(seq_q / 128) (one 128-query tile
// each):
//   occupancy(u) = [u / (u + u0)] / [u_ref / (u_ref + u0)]
// where u_ref is the table's units and u0 is fitted to the measured rows with fewer heads
// (validation/data/kernels/h200/attention.csv, cuDNN, 1 x 8 to 1 x 128 heads at 4,096 tokens).
// docs/workloads.md, "Attention", lists the rows and the model's error on them.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/common/units.hpp"
#include "workloads/kernels/kernel.hpp"

namespace stepsim::workloads::kernels {

struct AttentionRatePoint {
  std::int64_t head_dim = 0;
  bool causal = true;
  std::int64_t seq = 0;
  double forward_flops_per_s = 0;
  double backward_flops_per_s = 0;
  double units = 8192;  // u_ref: the work units of the measured row
};

struct AttentionRates {
  std::string kernel;  // "cuDNN fused attention", "FlashAttention-2"
  std::string source;  // the rows the points come from
  bool calibrated = false;
  std::vector<AttentionRatePoint> points;
  double half_units = 214;  // u0
  double scale = 1.0;       // multiplies every rate (a device without its own table)
};

class AttentionModel {
 public:
  explicit AttentionModel(AttentionRates rates);
  // The kernel's FLOP rate and time for a forward (kForward) or a backward (any backward pass).
  double flops_per_s(const AttentionShape& shape, KernelPass pass) const;
  Time time(const AttentionShape& shape, KernelPass pass) const;
  const AttentionRates& rates() const { return rates_; }

 private:
  // The table's rate at (head_dim, causal, seq) and the reference units it was measured at.
  std::pair<double, double> table_rate(std::int64_t head_dim, bool causal, std::int64_t seq,
                                       bool backward) const;
  AttentionRates rates_;
};

// The preset of a device (a100, h100, h200, h800, b200, ascend-910c); nullopt for another name.
std::optional<AttentionModel> attention_model_preset(std::string_view device);

}  // namespace stepsim::workloads::kernels
