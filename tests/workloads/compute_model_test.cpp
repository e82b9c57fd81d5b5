// The roofline compute model and the device presets.
#include <gtest/gtest.h>

#include "workloads/compute_model.hpp"
#include "workloads/device.hpp"

namespace stepsim::workloads {
namespace {

TEST(DevicePresets, DenseBf16PeaksFromTheDatasheets) {
  EXPECT_DOUBLE_EQ(find_device_preset("a100")->peak_bf16_flops_per_s, 312e12);
  EXPECT_DOUBLE_EQ(find_device_preset("h100")->peak_bf16_flops_per_s, 989e12);
  EXPECT_DOUBLE_EQ(find_device_preset("h200")->peak_bf16_flops_per_s, 989e12);
  EXPECT_DOUBLE_EQ(find_device_preset("b200")->peak_bf16_flops_per_s, 2250e12);
  EXPECT_DOUBLE_EQ(find_device_preset("ascend-910c")->peak_bf16_flops_per_s, 752e12);
  EXPECT_DOUBLE_EQ(find_device_preset("h200")->hbm_bandwidth.value(), 4.8e12);
  EXPECT_EQ(find_device_preset("h200")->hbm_capacity, Bytes(141'000'000'000));
  EXPECT_EQ(device_preset_names().size(), 5u);
}

TEST(FlopRate, ParsesUnits) {
  EXPECT_DOUBLE_EQ(*parse_flop_rate("989 TFLOP/s"), 989e12);
  EXPECT_DOUBLE_EQ(*parse_flop_rate("2.25PFLOPS"), 2.25e15);
  EXPECT_DOUBLE_EQ(*parse_flop_rate("1e3 GFLOP/s"), 1e12);
  EXPECT_FALSE(parse_flop_rate("989").has_value());
  EXPECT_FALSE(parse_flop_rate("-1 TFLOP/s").has_value());
  EXPECT_FALSE(parse_flop_rate("5 TB/s").has_value());
}

TEST(ComputeModel, RooflineTakesTheSlowerOfComputeAndMemoryPlusOverhead) {
  ComputeModel m;
  m.device = *find_device_preset("h100");
  m.launch_overhead = Time::us(5);
  // GEMM of 989e12 x 0.75 FLOPs takes 1 s at 75% of 989 TFLOP/s (memory negligible).
  EXPECT_EQ(m.duration(OpName::kQkv, Phase::kForward, ComputeKind::kGemm, 989e12 * 0.75, 1e6),
            Time::ms(1000) + Time::us(5));
  // Element-wise: 3.35e12 x 0.7 bytes take 1 s at 70% of 3.35 TB/s.
  EXPECT_EQ(
      m.duration(OpName::kNorm, Phase::kForward, ComputeKind::kElementwise, 1e6, 3.35e12 * 0.7),
      Time::ms(1000) + Time::us(5));
}

TEST(ComputeModel, Fp8SpeedsUpOnlyTheLinearLayers) {
  ComputeModel m;
  m.device = *find_device_preset("h100");
  m.precision = Precision::kFp8;
  EXPECT_DOUBLE_EQ(m.peak_flops_per_s(ComputeKind::kGemm), 1979e12);
  EXPECT_DOUBLE_EQ(m.peak_flops_per_s(ComputeKind::kAttention), 989e12);
}

TEST(ComputeModel, MeasuredKernelTimesReplaceTheRoofline) {
  ComputeModel m;
  m.device = *find_device_preset("h100");
  m.kernel_times[{OpName::kQkv, Phase::kForward}] = Time::us(123);
  EXPECT_EQ(m.duration(OpName::kQkv, Phase::kForward, ComputeKind::kGemm, 1e15, 0), Time::us(123));
  EXPECT_EQ(m.duration(OpName::kQkv, Phase::kRecompute, ComputeKind::kGemm, 1e15, 0),
            Time::us(123));
  EXPECT_NE(m.duration(OpName::kQkv, Phase::kBackward, ComputeKind::kGemm, 1e15, 0), Time::us(123));
}

}  // namespace
}  // namespace stepsim::workloads
