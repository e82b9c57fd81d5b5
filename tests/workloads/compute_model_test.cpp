// The roofline compute model and the device presets.
#include <gtest/gtest.h>

#include <string>

#include "sim/common/config.hpp"
#include "sim/common/input_error.hpp"
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

namespace stepsim::workloads {
namespace {

ComputeModel compute_of(const std::string& yaml) {
  const auto doc = config::Document::parse(yaml, "test.yaml");
  return parse_compute(doc.root(), Precision::kBf16);
}

TEST(ComputeModel, TheKernelModelIsTheDefaultWhereTheRooflineIsAnAssumption) {
  // a100 and b200: the kernel-level model unless roofline numbers are given.
  EXPECT_TRUE(compute_of("{device: a100}").kernels.has_value());
  EXPECT_TRUE(compute_of("{device: b200}").kernels.has_value());
  EXPECT_FALSE(compute_of("{device: a100, efficiency: {gemm: 0.6}}").kernels.has_value());
  EXPECT_FALSE(compute_of("{device: b200, model: roofline}").kernels.has_value());
  // Hopper (calibrated roofline) and Ascend (no kernel data): the roofline.
  EXPECT_FALSE(compute_of("{device: h200}").kernels.has_value());
  EXPECT_FALSE(compute_of("{device: ascend-910c}").kernels.has_value());
  EXPECT_TRUE(compute_of("{device: ascend-910c, model: kernels}").kernels.has_value());
}

TEST(ComputeModel, PresetsKeepTheRooflineUnlessTheKernelModelIsAsked) {
  EXPECT_FALSE(compute_of("{device: h100}").kernels.has_value());
  EXPECT_TRUE(compute_of("{device: h100, model: kernels}").kernels.has_value());
  EXPECT_TRUE(compute_of("{device: a100, model: kernels}").kernels.has_value());
  EXPECT_FALSE(compute_of("{device: h100, model: roofline}").kernels.has_value());
  EXPECT_FALSE(compute_of("{device: h100, efficiency: {gemm: 0.6}}").kernels.has_value());
  EXPECT_FALSE(compute_of("{peak: {bf16: 100TFLOP/s}, hbm_bandwidth: 1TB/s, hbm_capacity: 10GB}")
                   .kernels.has_value());
  EXPECT_FALSE(compute_of("{device: h100, model: kernels, attention: unfused}").fused_attention);
  // 16 of the H100's 132 SMs held by communication kernels; none under the roofline.
  EXPECT_DOUBLE_EQ(compute_of("{device: h100, model: kernels}").comm_sm_share(), 16.0 / 132.0);
  EXPECT_DOUBLE_EQ(compute_of("{device: h100, model: kernels, comm_sms: 0}").comm_sm_share(), 0.0);
  EXPECT_DOUBLE_EQ(compute_of("{device: h100}").comm_sm_share(), 0.0);
}

TEST(ComputeModel, RooflineNumbersWithTheKernelModelAreAnError) {
  for (const char* yaml : {"{device: h100, model: kernels, efficiency: {gemm: 0.6}}",
                           "{device: h100, model: kernels, peak: {bf16: 900TFLOP/s}}",
                           "{device: h100, model: kernels, hbm_bandwidth: 3TB/s}"}) {
    try {
      compute_of(yaml);
      FAIL() << "expected an InputError for " << yaml;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("roofline"), std::string::npos) << e.what();
    }
  }
}

TEST(ComputeModel, KernelModelForADeviceWithoutOneIsAnError) {
  try {
    compute_of(
        "{peak: {bf16: 100TFLOP/s}, hbm_bandwidth: 1TB/s, hbm_capacity: 10GB, "
        "model: kernels}");
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("model"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("roofline"), std::string::npos) << e.what();
  }
  EXPECT_THROW(compute_of("{device: h100, attention: flash}"), InputError);
}

}  // namespace
}  // namespace stepsim::workloads
