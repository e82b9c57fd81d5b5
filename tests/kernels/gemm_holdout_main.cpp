// Prints docs/gemm-model.md's tables: every fit of the GEMM presets repeated from
// validation/data/kernels/, its error on the rows fitted and on the rows held out, and the checks
// on other devices. Usage: gemm_holdout [repository root] (default: the source tree it was built
// from). Output is deterministic.
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <exception>
#include <string>

#include "gemm_calibration.hpp"
#include "sim/common/input_error.hpp"

using namespace stepsim;
using namespace stepsim::workloads::kernels;

namespace {

std::string shape_text(const GemmShape& s) {
  return fmt::format("{}x{}x{}x{}", s.batch, s.m, s.n, s.k);
}

std::string pct(double x) {
  return fmt::format("{:.1f}%", 100 * x);
}

void print_params(const GemmDeviceParams& p) {
  fmt::print(
      "| {} | {} | {:.1f} | {:.1f} | {:.1f} | {:.0f} | {:.4f} | {:.2f} | {:.2f} | {:.3f} |\n",
      p.device, p.sm_count, p.ceiling_bf16_flops_per_s / 1e12, p.ceiling_tf32_flops_per_s / 1e12,
      p.ceiling_fp8_flops_per_s / 1e12, p.hbm_bandwidth.gigabytes_per_second(),
      p.tile_rate_over_ceiling, p.tile_k_overhead, p.tile_balance_intensity,
      p.kernel_fixed_cost.microseconds());
}

void print_stats_row(const std::string& head, const GemmErrorStats& s) {
  fmt::print("| {} | {} | {} | {:+.1f}% | {} ({}, {:+.1f}%) |\n", head, s.rows, pct(s.mean_abs),
             100 * s.mean_signed, pct(s.worst_abs), shape_text(s.worst_shape),
             100 * s.worst_signed);
}

void print_points(const std::vector<calibration::PointCheck>& points) {
  fmt::print(
      "| series | batch x m x n x k | measured TFLOP/s | model TFLOP/s | model - measured |\n");
  fmt::print("|---|---|---|---|---|\n");
  for (const auto& p : points) {
    fmt::print("| {} | {} | {:.0f} | {:.0f} | {:+.0f} ({:+.1f}%) |\n", p.label, shape_text(p.shape),
               p.measured_flops_per_s / 1e12, p.model_flops_per_s / 1e12,
               (p.model_flops_per_s - p.measured_flops_per_s) / 1e12,
               100 * (p.model_flops_per_s / p.measured_flops_per_s - 1));
  }
}

void print_ramp(const calibration::Calibration& c, const std::vector<GemmTableRow>& rows,
                const GemmDeviceParams& p, bool vary_k) {
  const GemmModel model(p);
  fmt::print("| m | n | k | measured us | model us | measured TFLOP/s | model TFLOP/s |\n");
  fmt::print("|---|---|---|---|---|---|---|\n");
  for (std::int64_t v = 256; v <= 4096; v *= 2) {
    const GemmShape s{4096, vary_k ? 4096 : v, vary_k ? v : 4096, 1};
    for (const GemmTableRow& r : rows) {
      if (r.dtype != GemmDtype::kBf16 || r.shape != s) continue;
      const GemmEstimate e = model.model_estimate(s, GemmDtype::kBf16);
      fmt::print("| {} | {} | {} | {:.2f} | {:.2f} | {:.0f} | {:.0f} |\n", s.m, s.n, s.k,
                 r.time.microseconds(), e.time.microseconds(), r.flops_per_s() / 1e12,
                 e.flops_per_s / 1e12);
    }
  }
  (void)c;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string root = argc > 1 ? argv[1] : STEPSIM_SOURCE_DIR;
    const calibration::Calibration c = calibration::calibrate(root);

    fmt::print("## Fitted parameters\n\n");
    fmt::print(
        "| device | SMs | bf16 ceiling TFLOP/s | tf32 | fp8 | HBM GB/s | tile_rate_over_ceiling "
        "| tile_k_overhead (k elements) | tile_balance_intensity (FLOP/element) | "
        "kernel_fixed_cost us |\n");
    fmt::print("|---|---|---|---|---|---|---|---|---|---|\n");
    for (const GemmDeviceParams* p : {&c.h100, &c.b200, &c.b200_from_h100, &c.a100}) {
      print_params(*p);
    }

    fmt::print("\n## Fit and holdout error (model alone, |model/measured - 1|)\n\n");
    fmt::print(
        "H100 FP8: {} of XLA's 375 sm_90 f8e4m3fn x f8e4m3fn rows are unreliable (above "
        "the 1979 TFLOP/s dense peak or twice the bf16 rate at the same shape) and are left "
        "out.\n\n",
        c.h100_fp8_unreliable_rows);
    fmt::print("| device, dtype, rows | rows | mean | bias | worst (b x m x n x k, signed) |\n");
    fmt::print("|---|---|---|---|---|\n");
    for (const auto& f : c.fits) {
      print_stats_row(fmt::format("{} {} fitted ({})", f.device, to_string(f.dtype), f.rows),
                      f.fit);
      print_stats_row(fmt::format("{} {} **holdout**", f.device, to_string(f.dtype)), f.holdout);
    }

    fmt::print(
        "\n## B200 from H100's fit (148 SMs, each ceiling B200's fastest row), whole table\n\n");
    fmt::print("| dtype | rows | mean | bias | worst |\n|---|---|---|---|---|\n");
    const GemmDtype dtypes[] = {GemmDtype::kBf16, GemmDtype::kTf32, GemmDtype::kFp8};
    for (int i = 0; i < 3; ++i)
      print_stats_row(std::string(to_string(dtypes[i])),
                      c.b200_transfer[static_cast<std::size_t>(i)]);

    fmt::print("\n## A100 (H100's fit, 108 SMs, MAMF ceiling) vs NVIDIA's chart (+-5 TFLOP/s)\n\n");
    print_points(c.a100_chart);
    for (GemmDtype d : {GemmDtype::kBf16, GemmDtype::kTf32}) {
      int n = 0, within = 0;
      double sum = 0;
      for (const auto& p : c.a100_chart) {
        if (p.dtype != d) continue;
        const double diff = (p.model_flops_per_s - p.measured_flops_per_s) / 1e12;
        ++n;
        within += std::abs(diff) <= 5 ? 1 : 0;
        sum += std::abs(p.model_flops_per_s / p.measured_flops_per_s - 1);
      }
      fmt::print("\n{}: {} points, mean |model/chart - 1| {}, {} within +-5 TFLOP/s", to_string(d),
                 n, pct(sum / n), within);
    }

    fmt::print("\n\n## H800 FP8 (h800 preset = H100's fit) vs DeepGEMM\n\n");
    print_points(c.h800_deepgemm);
    double dg = 0;
    for (const auto& p : c.h800_deepgemm)
      dg += std::abs(p.model_flops_per_s / p.measured_flops_per_s - 1);
    fmt::print("\nmean |model/measured - 1| over {} rows: {}\n", c.h800_deepgemm.size(),
               pct(dg / static_cast<double>(c.h800_deepgemm.size())));

    fmt::print(
        "\n## H200 layer-shape GEMMs (validation/data/kernels/h200/gemm.csv, set model), not "
        "fitted\n\n");
    fmt::print("| model, dtype | rows | mean | bias | worst |\n|---|---|---|---|---|\n");
    GemmDeviceParams h200 = *gemm_params_preset("h200");
    for (GemmDtype d : {GemmDtype::kBf16, GemmDtype::kFp8}) {
      print_stats_row(fmt::format("h200 preset {}", to_string(d)),
                      gemm_model_error(h200, c.h200_rows, d));
    }
    fmt::print(
        "\nUnder sustained load (scale = median of measured / model over the even rows; the odd "
        "rows check it):\n\n| dtype | fit rows | scale | check rows | check mean, unscaled | "
        "check mean, scaled |\n|---|---|---|---|---|---|\n");
    for (GemmDtype d : {GemmDtype::kBf16, GemmDtype::kFp8}) {
      const calibration::SustainedScale s = calibration::sustained_scale(h200, c.h200_rows, d);
      fmt::print("| {} | {} | {:.3f} | {} | {} | {} |\n", to_string(d), s.fit_rows, s.scale,
                 s.check_rows, pct(s.check_mean_abs_unscaled), pct(s.check_mean_abs));
    }
    fmt::print(
        "\n## Ramps, H100 bf16, b=1 (XLA sm_90 rows vs the model)\n\nk ramp (m=n=4096):\n\n");
    print_ramp(c, c.h100_rows, c.h100, true);
    fmt::print("\nn ramp (m=k=4096):\n\n");
    print_ramp(c, c.h100_rows, c.h100, false);
    return 0;
  } catch (const InputError& e) {
    std::fprintf(stderr, "gemm_holdout: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gemm_holdout: %s\n", e.what());
    return 1;
  }
}
