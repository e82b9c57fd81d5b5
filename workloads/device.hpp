// An accelerator as the compute model sees it: dense peak FLOP rates by data type, HBM bandwidth
// and capacity. Presets cite their datasheets; docs/workloads.md lists them.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/common/units.hpp"

namespace stepsim::workloads {

enum class Precision : std::uint8_t { kFp32, kBf16, kFp16, kFp8 };

std::string_view to_string(Precision p);
// Bytes of one element of activations, parameters and gradients in this precision. FP8 training
// (Transformer Engine) keeps weights, activations between layers and communication in BF16.
std::int64_t element_bytes(Precision p);

struct DeviceSpec {
  std::string name;
  std::string source;
  // Dense (no structured sparsity) peak rates in FLOP/s; 0 when the device lacks the data type.
  double peak_fp32_flops_per_s = 0;
  double peak_bf16_flops_per_s = 0;
  double peak_fp16_flops_per_s = 0;
  double peak_fp8_flops_per_s = 0;
  BytesPerSecond hbm_bandwidth;
  Bytes hbm_capacity;
  // Calibrated compute model defaults for this device, when it has them (docs/validation.md):
  // fraction of peak per ComputeKind (gemm, grouped_gemm, attention, elementwise, optimizer) and
  // the fixed cost per kernel. Empty: ComputeModel's generic defaults. A scenario's
  // `compute.efficiency` and `compute.launch_overhead` override them.
  std::optional<std::array<double, 5>> efficiency;
  std::optional<Time> launch_overhead;
  std::string calibration_source;  // where the calibrated numbers come from

  double peak_flops_per_s(Precision p) const;
};

std::optional<DeviceSpec> find_device_preset(std::string_view name);
std::vector<std::string> device_preset_names();

// Parses a FLOP rate such as "989 TFLOP/s", "989TFLOPS" or "2.25 PFLOP/s" (FLOP/s, GFLOP/s,
// TFLOP/s, PFLOP/s; "FLOPS" accepted for "FLOP/s"). Returns nullopt when the text does not parse.
std::optional<double> parse_flop_rate(std::string_view text);

}  // namespace stepsim::workloads
