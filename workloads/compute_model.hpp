// The time of one compute operation on one device: a roofline
//   max(FLOPs / (peak x efficiency), HBM bytes / (HBM bandwidth x efficiency)) + launch overhead,
// with an efficiency per kind of operation (GEMM, grouped GEMM, attention, element-wise,
// optimizer), or a measured time from a kernel table, which wins when it has the operation.
//
// The default efficiencies are assumptions (docs/workloads.md, "Compute model"), to be calibrated
// against shared/data/megatron_h100_weak_scaling.yaml by a later issue; every one is a parameter.
#pragma once

#include <array>
#include <cstddef>
#include <map>
#include <utility>

#include "sim/common/config.hpp"
#include "sim/common/units.hpp"
#include "workloads/device.hpp"
#include "workloads/operation.hpp"

namespace stepsim::workloads {

struct ComputeModel {
  DeviceSpec device;
  Precision precision = Precision::kBf16;
  // Fraction of peak (FLOP rate and HBM bandwidth alike) reached by each ComputeKind.
  std::array<double, static_cast<std::size_t>(ComputeKind::kCount)> efficiency = {0.75, 0.6, 0.55,
                                                                                  0.7, 0.7};
  Time launch_overhead = Time::us(5);
  // When positive, the fraction of the HBM bandwidth that the bytes side of the roofline uses
  // instead of the kind's efficiency. Serving sets it (a decode step streams the weights and the
  // KV cache; workloads/serving_spec.hpp); training leaves it 0.
  double memory_efficiency = 0.0;
  // Measured times by (operation, phase); they replace the roofline for those operations.
  std::map<std::pair<OpName, Phase>, Time> kernel_times;

  double efficiency_of(ComputeKind k) const { return efficiency[static_cast<std::size_t>(k)]; }
  // The FLOP rate a kind of operation computes at: GEMMs at the training precision's peak;
  // attention, element-wise and optimizer work at BF16 under FP8 training (Transformer Engine
  // runs only the linear layers in FP8).
  double peak_flops_per_s(ComputeKind k) const;
  // Roofline time (or measured time) of one operation.
  Time duration(OpName name, Phase phase, ComputeKind kind, double flops, double bytes) const;
};

// The compute model of `device` in BF16 with the device's calibrated efficiencies and launch
// overhead, or the generic defaults above when the device has none.
ComputeModel default_compute_model(const DeviceSpec& device,
                                   Precision precision = Precision::kBf16);

// Reads the `compute:` section:
//   compute:
//     device: h100                  # a preset (device_preset_names()), optional with the numbers
//     below peak: {bf16: 989TFLOP/s, fp8: 1979TFLOP/s, fp16: ..., fp32: ...}
//     hbm_bandwidth: 3.35TB/s
//     hbm_capacity: 80GB
//     efficiency: {gemm: 0.75, grouped_gemm: 0.6, attention: 0.55, elementwise: 0.7, optimizer:
//     0.7} launch_overhead: 5us kernel_times: kernels.yaml    # list of {op: qkv, phase: fwd, time:
//     120us}
// `precision` comes from the training section. Throws InputError naming the key for an unknown
// device, a missing number, a bad unit or a precision the device lacks.
ComputeModel parse_compute(const config::Node& compute, Precision precision);

}  // namespace stepsim::workloads
