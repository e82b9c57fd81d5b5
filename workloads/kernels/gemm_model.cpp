#include "workloads/kernels/gemm_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "sim/common/input_error.hpp"
#include "workloads/kernels/gemm_shipped_tables.hpp"
#include "workloads/kernels/gemm_table.hpp"

namespace stepsim::workloads::kernels {

std::string_view to_string(GemmDtype d) {
  switch (d) {
    case GemmDtype::kBf16:
      return "bf16";
    case GemmDtype::kFp8:
      return "fp8";
    case GemmDtype::kTf32:
      return "tf32";
  }
  return "?";
}

int element_bytes(GemmDtype d) {
  switch (d) {
    case GemmDtype::kBf16:
      return 2;
    case GemmDtype::kFp8:
      return 1;
    case GemmDtype::kTf32:
      return 4;
  }
  return 0;
}

double GemmShape::flops() const {
  return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) *
         static_cast<double>(batch);
}

std::vector<GemmTileShape> default_gemm_tile_shapes() {
  return {{64, 64}, {64, 128}, {128, 64}, {64, 256}, {256, 64}, {128, 128}, {128, 256}, {256, 128}};
}

double GemmDeviceParams::ceiling_flops_per_s(GemmDtype d) const {
  switch (d) {
    case GemmDtype::kBf16:
      return ceiling_bf16_flops_per_s;
    case GemmDtype::kFp8:
      return ceiling_fp8_flops_per_s;
    case GemmDtype::kTf32:
      return ceiling_tf32_flops_per_s;
  }
  return 0;
}

void GemmDeviceParams::set_ceiling_flops_per_s(GemmDtype d, double flops_per_s) {
  switch (d) {
    case GemmDtype::kBf16:
      ceiling_bf16_flops_per_s = flops_per_s;
      return;
    case GemmDtype::kFp8:
      ceiling_fp8_flops_per_s = flops_per_s;
      return;
    case GemmDtype::kTf32:
      ceiling_tf32_flops_per_s = flops_per_s;
      return;
  }
}

GemmModel::GemmModel(GemmDeviceParams params) : params_(std::move(params)) {}

void GemmModel::set_table(std::shared_ptr<const GemmTable> table) {
  table_ = std::move(table);
}

namespace {

void check(const GemmDeviceParams& p, const GemmShape& s, GemmDtype d) {
  if (s.m < 1 || s.n < 1 || s.k < 1 || s.batch < 1) {
    throw InputError(fmt::format("GEMM shape m={} n={} k={} batch={}: every size must be >= 1", s.m,
                                 s.n, s.k, s.batch));
  }
  if (!(p.ceiling_flops_per_s(d) > 0)) {
    throw InputError(fmt::format("device '{}' has no {} GEMM rate", p.device, to_string(d)));
  }
  if (p.sm_count < 1 || p.tile_shapes.empty() || !(p.hbm_bandwidth.value() > 0) ||
      !(p.tile_rate_over_ceiling > 0)) {
    throw InputError(fmt::format(
        "device '{}': the GEMM model needs sm_count >= 1, a tile shape, an HBM bandwidth and "
        "tile_rate_over_ceiling > 0",
        p.device));
  }
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

}  // namespace

GemmEstimate GemmModel::model_estimate(const GemmShape& shape, GemmDtype dtype) const {
  check(params_, shape, dtype);
  const double ceiling = params_.ceiling_flops_per_s(dtype);
  const double per_sm_flops_per_s =
      ceiling * params_.tile_rate_over_ceiling / static_cast<double>(params_.sm_count);
  double compute_s = std::numeric_limits<double>::infinity();
  for (const GemmTileShape& t : params_.tile_shapes) {
    const std::int64_t tiles = ceil_div(shape.m, t.m) * ceil_div(shape.n, t.n) * shape.batch;
    const std::int64_t waves = ceil_div(tiles, params_.sm_count);
    const double tile_flops_per_k = 2.0 * t.m * t.n;
    const double intensity = tile_flops_per_k / (t.m + t.n);  // FLOP per operand element
    const double slowdown = std::max(1.0, params_.tile_balance_intensity / intensity);
    const double tile_s = (static_cast<double>(shape.k) + params_.tile_k_overhead) *
                          tile_flops_per_k / per_sm_flops_per_s * slowdown;
    compute_s = std::min(compute_s, static_cast<double>(waves) * tile_s);
  }
  compute_s = std::max(compute_s, shape.flops() / ceiling);
  const double bytes = (static_cast<double>(shape.m) * static_cast<double>(shape.k) +
                        static_cast<double>(shape.k) * static_cast<double>(shape.n) +
                        static_cast<double>(shape.m) * static_cast<double>(shape.n)) *
                       element_bytes(dtype) * static_cast<double>(shape.batch);
  const double memory_s = bytes / params_.hbm_bandwidth.value();
  GemmEstimate e;
  e.memory_bound = memory_s > compute_s;
  e.time = Time::from_seconds(std::max(compute_s, memory_s)) + params_.kernel_fixed_cost;
  e.source = GemmSource::kModel;
  e.flops_per_s = shape.flops() / e.time.seconds();
  return e;
}

GemmEstimate GemmModel::estimate(const GemmShape& shape, GemmDtype dtype) const {
  check(params_, shape, dtype);
  if (table_) {
    if (const std::optional<Time> t = table_->lookup(shape, dtype)) {
      GemmEstimate e;
      e.time = *t;
      e.source = GemmSource::kTable;
      e.flops_per_s = shape.flops() / t->seconds();
      return e;
    }
  }
  return model_estimate(shape, dtype);
}

// ---- Presets ---------------------------------------------------------------------------------
// Every number below is printed by `gemm_holdout` (tests/kernels/gemm_holdout_main.cpp), which
// repeats the fits from the tables in validation/data/kernels/; kernels_tests checks that the
// presets match it. docs/gemm-model.md lists them with their errors.

namespace {

constexpr double kTera = 1e12;

GemmDeviceParams h100_params() {
  GemmDeviceParams p;
  p.device = "h100";
  p.sm_count = 132;
  p.ceiling_bf16_flops_per_s = 804.715 * kTera;
  p.ceiling_tf32_flops_per_s = 282.8 * kTera;
  p.ceiling_fp8_flops_per_s = 1739.8 * kTera;
  p.hbm_bandwidth = BytesPerSecond::gigabytes(2668);
  p.tile_rate_over_ceiling = 1.0961;
  p.tile_k_overhead = 174.32;
  p.tile_balance_intensity = 73.81;
  p.kernel_fixed_cost = Time::ps(5'108'000);
  p.calibrated = true;
  p.source =
      "validation/data/kernels/xla_matmul_sm_90.csv (XLA's H100 table): bf16 ceiling its fastest "
      "bf16 row (4x4096x2048x4096, 804.7 TFLOP/s); tile_rate_over_ceiling, tile_k_overhead, "
      "tile_balance_intensity and kernel_fixed_cost fitted (least squares on log time) to the "
      "bf16 rows of the fit half (is_holdout_shape false); tf32 ceiling fitted to that half's f32 "
      "rows, fp8 ceiling to its reliable f8e4m3fn x f8e4m3fn rows (at most 1979 TFLOP/s and twice "
      "the bf16 rate; without_unreliable_sm90_fp8_rows), tile parameters kept; hbm_bandwidth "
      "2668 GB/s: DeepGEMM's achieved GEMM bandwidth on H800 SXM5 (same HBM3), "
      "validation/data/kernels/hbm.yaml cross_reference_h800_gemm_achieved_bandwidth";
  return p;
}

GemmDeviceParams b200_params() {
  GemmDeviceParams p;
  p.device = "b200";
  p.sm_count = 148;
  p.ceiling_bf16_flops_per_s = 1670.467 * kTera;
  p.ceiling_tf32_flops_per_s = 794.5 * kTera;
  p.ceiling_fp8_flops_per_s = 3124.5 * kTera;
  p.hbm_bandwidth = BytesPerSecond::gigabytes(6400);
  p.tile_rate_over_ceiling = 0.9469;
  p.tile_k_overhead = 192.32;
  p.tile_balance_intensity = 48.15;
  p.kernel_fixed_cost = Time::ps(5'679'000);
  p.calibrated = true;
  p.source =
      "validation/data/kernels/xla_matmul_sm_100_B200.csv (XLA's B200 table): bf16 ceiling its "
      "fastest bf16 row (4x4096x4096x4096, 1670.5 TFLOP/s); tile_rate_over_ceiling, "
      "tile_k_overhead, tile_balance_intensity and kernel_fixed_cost fitted (least squares on log "
      "time) to the bf16 rows of the fit half (is_holdout_shape false); tf32 and fp8 (f8e4m3fn x "
      "f8e4m3fn) ceilings fitted to those types' rows of that half, tile parameters kept; "
      "hbm_bandwidth 6400 GB/s: not measured, B200's 8 TB/s datasheet peak times 0.8, the "
      "measured-to-peak ratio of DeepGEMM's H800 GEMMs (2668 of 3350 GB/s, "
      "validation/data/kernels/hbm.yaml)";
  return p;
}

GemmDeviceParams a100_params() {
  GemmDeviceParams p = h100_params();
  p.device = "a100";
  p.sm_count = 108;
  p.ceiling_bf16_flops_per_s = 271.2 * kTera;
  p.ceiling_tf32_flops_per_s = p.ceiling_bf16_flops_per_s / 2;
  p.ceiling_fp8_flops_per_s = 0;
  p.hbm_bandwidth = BytesPerSecond::gigabytes(1759);
  p.source =
      "bf16 ceiling validation/data/kernels/a100_gemm.yaml's MAMF best-shape rate (A100 SXM, "
      "271.2 TFLOP/s at 1024x10240x5120, torch 2.6); tf32 ceiling half of it (the "
      "datasheet's 156 vs 312 dense ratio); no fp8; tile_rate_over_ceiling, tile_k_overhead, "
      "tile_balance_intensity and kernel_fixed_cost from H100's fit (xla_matmul_sm_90.csv); "
      "hbm_bandwidth 1759 GB/s: "
      "gpu-stream triad on A100 80GB (validation/data/kernels/hbm.yaml). No per-shape A100 table "
      "is public (a100_gemm.yaml); its square sweep read from NVIDIA's chart checks the model";
  return p;
}

GemmDeviceParams h200_params() {
  GemmDeviceParams p = h100_params();
  p.device = "h200";
  p.hbm_bandwidth = BytesPerSecond::gigabytes(3534);
  p.source =
      "H100's parameters (same 132-SM die, clocks and tensor-core rates; the h100 preset's "
      "source) with hbm_bandwidth 3534 GB/s: gpu-stream triad on H200 "
      "(validation/data/kernels/hbm.yaml); table: XLA's sm_90 table as for H100";
  return p;
}

GemmDeviceParams h800_params() {
  GemmDeviceParams p = h100_params();
  p.device = "h800";
  p.source =
      "H100's parameters (same SMs and dense rates; H800 differs in NVLink only; the h100 "
      "preset's source); hbm_bandwidth 2668 GB/s is DeepGEMM's own H800 measurement "
      "(validation/data/kernels/hbm.yaml). FP8 is checked against "
      "validation/data/kernels/deepgemm_fp8_h800.yaml, not fitted to it";
  return p;
}

GemmDeviceParams ascend_910c_params() {
  GemmDeviceParams p = h100_params();
  p.device = "ascend-910c";
  p.sm_count = 48;
  p.ceiling_bf16_flops_per_s = 752.0 * kTera * (804.715 / 989.0);
  p.ceiling_tf32_flops_per_s = 0;
  p.ceiling_fp8_flops_per_s = 0;
  p.hbm_bandwidth = BytesPerSecond(3.2e12 * 0.8);
  p.calibrated = false;
  p.source =
      "not calibrated: no public per-shape Ascend 910C GEMM measurements. Generic values: 48 AI "
      "cores (two dies of 24, assumed) in place of SMs; bf16 ceiling the 752 TFLOP/s dense peak "
      "(arXiv 2506.12708) times H100's measured-best-to-peak ratio (804.7 / 989); no fp8 (none on "
      "the chip) and no tf32 (no public rate); HBM 3.2 TB/s times 0.8; tile and fixed-cost "
      "parameters H100's";
  return p;
}

}  // namespace

std::vector<std::string> gemm_model_preset_names() {
  return {"a100", "h100", "h200", "h800", "b200", "ascend-910c"};
}

std::optional<GemmDeviceParams> gemm_params_preset(std::string_view device) {
  if (device == "a100") return a100_params();
  if (device == "h100") return h100_params();
  if (device == "h200") return h200_params();
  if (device == "h800") return h800_params();
  if (device == "b200") return b200_params();
  if (device == "ascend-910c") return ascend_910c_params();
  return std::nullopt;
}

std::optional<GemmModel> gemm_model_preset(std::string_view device) {
  std::optional<GemmDeviceParams> params = gemm_params_preset(device);
  if (!params) return std::nullopt;
  GemmModel model(std::move(*params));
  if (device == "h100" || device == "h200") {
    model.set_table(
        std::make_shared<const GemmTable>(without_unreliable_sm90_fp8_rows(GemmTable::from_csv(
            shipped::xla_matmul_sm_90_csv(), "validation/data/kernels/xla_matmul_sm_90.csv"))));
  } else if (device == "b200") {
    model.set_table(std::make_shared<const GemmTable>(
        GemmTable::from_csv(shipped::xla_matmul_sm_100_b200_csv(),
                            "validation/data/kernels/xla_matmul_sm_100_B200.csv")));
  }
  return model;
}

}  // namespace stepsim::workloads::kernels
