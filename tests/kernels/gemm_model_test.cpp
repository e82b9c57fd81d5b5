// The GEMM time model's closed forms (workloads/kernels/gemm_model.hpp) and its presets.
#include "workloads/kernels/gemm_model.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "sim/common/input_error.hpp"
#include "sim/common/text_file.hpp"
#include "workloads/kernels/gemm_shipped_tables.hpp"
#include "workloads/kernels/gemm_table.hpp"

namespace stepsim::workloads::kernels {
namespace {

// One 128x128 tile shape on 4 SMs, no overheads, HBM out of the way: times are closed forms.
GemmDeviceParams toy_device() {
  GemmDeviceParams p;
  p.device = "toy";
  p.sm_count = 4;
  p.ceiling_bf16_flops_per_s = 4 * 2.0 * 128 * 128 * 1024 * 1e6;  // a k=1024 tile takes 1 us
  p.hbm_bandwidth = BytesPerSecond(1e18);
  p.tile_shapes = {{128, 128}};
  p.tile_rate_over_ceiling = 1;
  p.tile_k_overhead = 0;
  p.tile_balance_intensity = 0;
  p.kernel_fixed_cost = Time::us(2);
  return p;
}

TEST(GemmModel, OneTileMoreThanAWaveCostsAWholeWave) {
  const GemmModel model(toy_device());
  // 4 tiles of 128x128 on 4 SMs: one wave. A tile: 2*128*128*1024 FLOP at a quarter of the
  // ceiling = 1 us.
  const GemmShape one_wave{512, 128, 1024, 1};
  const GemmShape five_tiles{640, 128, 1024, 1};
  const double wave_s = 1e-6;
  const GemmEstimate a = model.estimate(one_wave, GemmDtype::kBf16);
  const GemmEstimate b = model.estimate(five_tiles, GemmDtype::kBf16);
  EXPECT_EQ(a.time, Time::from_seconds(wave_s) + Time::us(2));
  EXPECT_EQ(b.time, Time::from_seconds(2 * wave_s) + Time::us(2));
  EXPECT_EQ((b.time - a.time).picoseconds(), Time::from_seconds(wave_s).picoseconds());
  EXPECT_FALSE(a.memory_bound);
  EXPECT_EQ(a.source, GemmSource::kModel);
  // A batch of 2 of the one-wave shape is 8 tiles: two waves too.
  EXPECT_EQ(model.estimate({512, 128, 1024, 2}, GemmDtype::kBf16).time, b.time);
}

TEST(GemmModel, PerTileKOverheadAndLoadBoundTilesSlowSmallProducts) {
  GemmDeviceParams p = toy_device();
  p.tile_k_overhead = 1024;  // doubles a k=1024 tile
  p.kernel_fixed_cost = Time::zero();
  const GemmShape s{512, 128, 1024, 1};
  EXPECT_EQ(GemmModel(p).estimate(s, GemmDtype::kBf16).time, Time::us(2));
  // A 128x128 tile does 2*128*128/256 = 128 FLOP per operand element: a balance of 256 halves
  // its rate.
  p.tile_k_overhead = 0;
  p.tile_balance_intensity = 256;
  EXPECT_EQ(GemmModel(p).estimate(s, GemmDtype::kBf16).time, Time::us(2));
}

TEST(GemmModel, NoProductRunsFasterThanTheCeiling) {
  GemmDeviceParams p = toy_device();
  p.tile_rate_over_ceiling = 2;  // the tile loop alone would run at twice the ceiling
  p.kernel_fixed_cost = Time::zero();
  const GemmShape s{512, 128, 1024, 1};
  EXPECT_EQ(GemmModel(p).estimate(s, GemmDtype::kBf16).time,
            Time::from_seconds(s.flops() / p.ceiling_bf16_flops_per_s));
}

TEST(GemmModel, SkinnyProductIsMemoryBound) {
  const GemmDeviceParams p = *gemm_params_preset("h100");
  const GemmModel model(p);
  // Decode-like m=1 against an 8192x8192 BF16 weight: the weight's 134 MB at 2668 GB/s.
  const GemmShape s{1, 8192, 8192, 1};
  const double bytes = (1.0 * 8192 + 8192.0 * 8192 + 1.0 * 8192) * 2;
  const GemmEstimate e = model.estimate(s, GemmDtype::kBf16);
  EXPECT_TRUE(e.memory_bound);
  EXPECT_EQ(e.time, Time::from_seconds(bytes / 2668e9) + p.kernel_fixed_cost);
  EXPECT_NEAR(e.time.microseconds(), 50.3 + 5.108, 0.1);
  // m=16 reads the same weight: still memory-bound, slightly longer.
  const GemmEstimate e16 = model.estimate({16, 8192, 8192, 1}, GemmDtype::kBf16);
  EXPECT_TRUE(e16.memory_bound);
  EXPECT_GT(e16.time, e.time);
  EXPECT_LT(e16.time.seconds(), e.time.seconds() * 1.01);
  // FP8 moves half the bytes.
  EXPECT_NEAR(model.estimate(s, GemmDtype::kFp8).time.seconds() - p.kernel_fixed_cost.seconds(),
              bytes / 2 / 2668e9, 1e-9);
}

TEST(GemmModel, EfficiencyRisesTowardTheCeilingWithSize) {
  const GemmDeviceParams p = *gemm_params_preset("h100");
  const GemmModel model(p);
  double previous = 0;
  for (std::int64_t v = 256; v <= 16384; v *= 2) {
    const double rate = model.estimate({v, v, v, 1}, GemmDtype::kBf16).flops_per_s;
    EXPECT_GT(rate, previous) << v;
    EXPECT_LE(rate, p.ceiling_bf16_flops_per_s) << v;
    previous = rate;
  }
  EXPECT_GT(previous, 0.95 * p.ceiling_bf16_flops_per_s);
  // The ramps in k and n at m=4096 (docs/gemm-model.md): small k or n are far from the ceiling.
  const double k256 = model.estimate({4096, 4096, 256, 1}, GemmDtype::kBf16).flops_per_s;
  const double n256 = model.estimate({4096, 256, 4096, 1}, GemmDtype::kBf16).flops_per_s;
  EXPECT_LT(k256, 0.6 * p.ceiling_bf16_flops_per_s);
  EXPECT_LT(n256, 0.6 * p.ceiling_bf16_flops_per_s);
}

TEST(GemmModel, BadShapesAndMissingTypesThrow) {
  const GemmModel a100(*gemm_params_preset("a100"));
  EXPECT_THROW(a100.estimate({0, 128, 128, 1}, GemmDtype::kBf16), InputError);
  EXPECT_THROW(a100.estimate({128, 128, 128, 0}, GemmDtype::kBf16), InputError);
  try {
    a100.estimate({128, 128, 128, 1}, GemmDtype::kFp8);
    FAIL() << "A100 has no FP8";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("a100"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("fp8"), std::string::npos) << e.what();
  }
}

TEST(GemmPresets, EveryNameHasAPresetAndOnlyAscendIsUncalibrated) {
  for (const std::string& name : gemm_model_preset_names()) {
    const std::optional<GemmModel> m = gemm_model_preset(name);
    ASSERT_TRUE(m) << name;
    EXPECT_EQ(m->params().device, name);
    EXPECT_FALSE(m->params().source.empty());
    EXPECT_EQ(m->params().calibrated, name != "ascend-910c") << name;
    EXPECT_GT(m->estimate({4096, 4096, 4096, 1}, GemmDtype::kBf16).time, Time::zero());
  }
  EXPECT_FALSE(gemm_model_preset("h101"));
  EXPECT_NE(gemm_params_preset("ascend-910c")->source.find("not calibrated"), std::string::npos);
  // Tables ship for h100, h200 and b200 only.
  EXPECT_TRUE(gemm_model_preset("h100")->table());
  EXPECT_TRUE(gemm_model_preset("h200")->table());
  EXPECT_TRUE(gemm_model_preset("b200")->table());
  EXPECT_FALSE(gemm_model_preset("h800")->table());
  EXPECT_FALSE(gemm_model_preset("a100")->table());
}

TEST(GemmPresets, ShippedTableAnswersInsideItsRangeAndTheModelOutside) {
  const GemmModel h100 = *gemm_model_preset("h100");
  // xla_matmul_sm_90.csv: 4,4096,4096,4096,bf16 ... time_ns 697041 (line of b=4, m=n=k=4096).
  const GemmEstimate grid = h100.estimate({4096, 4096, 4096, 4}, GemmDtype::kBf16);
  EXPECT_EQ(grid.source, GemmSource::kTable);
  EXPECT_EQ(grid.time, Time::ns(697'041));
  EXPECT_EQ(h100.estimate({8192, 4096, 4096, 4}, GemmDtype::kBf16).source, GemmSource::kModel);
  EXPECT_EQ(h100.estimate({4096, 4096, 4096, 3}, GemmDtype::kBf16).source, GemmSource::kModel);
  // An unreliable FP8 row (2x4096x4096x4096 at 2538 TFLOP/s, above the dense peak) is not used.
  EXPECT_EQ(h100.estimate({4096, 4096, 4096, 2}, GemmDtype::kFp8).source, GemmSource::kModel);
  // A reliable one is: 1x256x256x256 f8e4m3fn x f8e4m3fn, 5600 ns.
  EXPECT_EQ(h100.estimate({256, 256, 256, 1}, GemmDtype::kFp8).time, Time::ns(5600));
}

TEST(GemmPresets, EmbeddedTablesAreTheFilesByteForByte) {
  const std::string dir = std::string(STEPSIM_SOURCE_DIR) + "/validation/data/kernels/";
  EXPECT_EQ(shipped::xla_matmul_sm_90_csv(),
            config::read_text_file(dir + "xla_matmul_sm_90.csv", "sm_90"));
  EXPECT_EQ(shipped::xla_matmul_sm_100_b200_csv(),
            config::read_text_file(dir + "xla_matmul_sm_100_B200.csv", "B200"));
}

TEST(GemmPresets, ModelsAreCheapToCopyAndDeterministic) {
  const GemmModel a = *gemm_model_preset("b200");
  const GemmModel b = a;  // NOLINT(performance-unnecessary-copy-initialization): the point
  EXPECT_EQ(a.table().get(), b.table().get());
  const GemmModel c = *gemm_model_preset("b200");
  for (const GemmShape& s : {GemmShape{3000, 5000, 700, 1}, GemmShape{300, 2000, 1000, 2},
                             GemmShape{12288, 49152, 12288, 1}}) {
    EXPECT_EQ(b.estimate(s, GemmDtype::kBf16).time, c.estimate(s, GemmDtype::kBf16).time);
  }
}

}  // namespace
}  // namespace stepsim::workloads::kernels
