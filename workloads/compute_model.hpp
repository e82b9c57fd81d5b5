// The time of one compute operation on one device, by the first of these that applies:
//  1. a measured time for the (operation, phase) from `compute.kernel_times`;
//  2. with `compute.model: kernels`, the kernel-level model (workloads/kernels/kernel_timer.hpp):
//     each kernel the operation runs timed from its shape (GEMMs by tiles and waves and the
//     device's GEMM table, fused attention from measured rates, memory-bound kernels by their
//     bytes at the achieved bandwidth of their kind), plus launch costs. Every device preset has
//     one, set from kernel-level measurements only (docs/workloads.md, "Kernel-level model");
//  3. the roofline (the default on the presets with calibrated efficiencies, parse_compute):
//       max(FLOPs / (peak x efficiency), HBM bytes / (HBM bandwidth x efficiency)) + launch
//     with an efficiency per kind of operation (the presets' values in device.cpp).
#pragma once

#include <array>
#include <cstddef>
#include <map>
#include <utility>

#include <optional>

#include "sim/common/config.hpp"
#include "sim/common/units.hpp"
#include "workloads/device.hpp"
#include "workloads/kernels/kernel_timer.hpp"
#include "workloads/op_cost.hpp"
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
  // Measured times by (operation, phase); they replace the models for those operations.
  std::map<std::pair<OpName, Phase>, Time> kernel_times;
  // The kernel-level model; empty: the roofline.
  std::optional<kernels::KernelTimer> kernels;
  // Attention as one fused kernel (FlashAttention-2 on A100, cuDNN's on Hopper), or unfused
  // (batched GEMMs, masked softmax, dropout: Megatron-LM before fused attention).
  bool fused_attention = true;
  // SMs the data- and tensor-parallel communication kernels hold while they run (NCCL's
  // channels, Transformer Engine's userbuffers); GEMMs and attention started beside one run on
  // the rest (the executor). Used with the kernel-level model only; 0: none.
  int comm_sms = 16;
  // comm_sms over the device's SMs (0 without the kernel-level model).
  double comm_sm_share() const;

  double efficiency_of(ComputeKind k) const { return efficiency[static_cast<std::size_t>(k)]; }
  // The FLOP rate a kind of operation computes at: GEMMs at the training precision's peak;
  // attention, element-wise and optimizer work at BF16 under FP8 training (Transformer Engine
  // runs only the linear layers in FP8).
  double peak_flops_per_s(ComputeKind k) const;
  // Roofline time (or measured time) of one operation.
  Time duration(OpName name, Phase phase, ComputeKind kind, double flops, double bytes) const;
  // The measured time of (operation, phase) from kernel_times, if any.
  std::optional<Time> measured_time(OpName name, Phase phase) const;
  // The operation's time: measured, from its kernels, or the roofline of its FLOPs and bytes.
  Time duration(OpName name, Phase phase, ComputeKind kind, const OpCost& cost) const;
};

// The compute model of `device` in `precision`, holding both models: the roofline's efficiencies
// and launch overhead from the device (or the generic defaults above), and the kernel-level model
// where the device is a preset that has one. parse_compute keeps one of them.
ComputeModel default_compute_model(const DeviceSpec& device,
                                   Precision precision = Precision::kBf16);

// Reads the `compute:` section:
//   compute:
//     device: h100                  # a preset (device_preset_names()), optional with the numbers
//     below peak: {bf16: 989TFLOP/s, fp8: 1979TFLOP/s, fp16: ..., fp32: ...}
//     hbm_bandwidth: 3.35TB/s
//     hbm_capacity: 80GB
//     model: kernels                # or roofline; default kernels where the device has no
//                                   # calibrated efficiencies and calibrated GEMMs (a100, b200)
//     attention: fused              # or unfused
//     gemm_table: my_gemms.csv      # the user's measured GEMMs: m,n,k,dtype,time
//     efficiency: {gemm: 0.75, grouped_gemm: 0.6, attention: 0.55, elementwise: 0.7,
//                  optimizer: 0.7}  # flat roofline efficiencies (implies model: roofline)
//     launch_overhead: 5us          # the roofline's cost per operation
//     kernel_times: kernels.yaml    # list of {op: qkv, phase: fwd, time: 120us}
// `precision` comes from the training section. Throws InputError naming the key for an unknown
// device, a missing number, a bad unit or a precision the device lacks.
ComputeModel parse_compute(const config::Node& compute, Precision precision);

}  // namespace stepsim::workloads
