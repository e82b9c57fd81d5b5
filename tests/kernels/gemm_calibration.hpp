// The calibration behind the GEMM presets and docs/gemm-model.md, as a function: reads the tables
// in validation/data/kernels/, repeats every fit and every check. Used by kernels_tests (which
// asserts on it) and by gemm_holdout (which prints it).
#pragma once

#include <string>
#include <vector>

#include "workloads/kernels/gemm_fit.hpp"
#include "workloads/kernels/gemm_model.hpp"
#include "workloads/kernels/gemm_table.hpp"

namespace stepsim::workloads::kernels::calibration {

struct FitReport {
  std::string device;
  GemmDtype dtype = GemmDtype::kBf16;
  std::string rows;  // which rows were fitted
  GemmErrorStats fit;
  GemmErrorStats holdout;
};

struct PointCheck {  // one measured figure against the model
  std::string label;
  GemmShape shape;
  GemmDtype dtype = GemmDtype::kBf16;
  double measured_flops_per_s = 0;
  double model_flops_per_s = 0;
};

struct Calibration {
  GemmDeviceParams h100, b200, a100, b200_from_h100;
  std::vector<FitReport> fits;                     // h100 and b200, bf16 / tf32 / fp8
  std::vector<GemmTableRow> h100_rows, b200_rows;  // as read (h100 fp8: reliable rows only)
  int h100_fp8_unreliable_rows = 0;
  std::vector<GemmErrorStats> b200_transfer;  // bf16, tf32, fp8 over B200's whole table
  std::vector<PointCheck> a100_chart;         // bf16 and tf32 square sweep (read from a chart)
  std::vector<PointCheck> h800_deepgemm;      // DeepGEMM FP8 on H800
  std::vector<GemmTableRow> h200_rows;        // validation/data/kernels/h200/gemm.csv, model sets
};

// The H200's layer-shape rows against the model under sustained load: scale = the median over
// the even rows (0, 2, 4, ... of `dtype` in file order) of measured time / model time (the
// model alone, GemmModel::model_estimate); the odd rows check it.
struct SustainedScale {
  GemmDtype dtype = GemmDtype::kBf16;
  int fit_rows = 0, check_rows = 0;
  double scale = 1;
  double check_mean_abs_unscaled = 0;  // |model / measured - 1| over the odd rows
  double check_mean_abs = 0;           // the same with the model's time x scale
};
SustainedScale sustained_scale(const GemmDeviceParams& params,
                               const std::vector<GemmTableRow>& rows, GemmDtype dtype);

// `source_dir` is the repository root. Throws InputError when a file is missing or malformed.
Calibration calibrate(const std::string& source_dir);

// The start of a device's fit (stated, so that the fits are reproducible): the preset's SMs and
// HBM, the bf16 ceiling the fastest bf16 row, tf32 / fp8 ceilings half / twice it,
// tile_rate_over_ceiling 1, tile_k_overhead 128, tile_balance_intensity 64, fixed cost 5 us.
GemmDeviceParams fit_start(const std::string& device, const std::vector<GemmTableRow>& rows);
// The row of `d` with the highest rate. Throws InputError when there is none.
const GemmTableRow& fastest_row(const std::vector<GemmTableRow>& rows, GemmDtype d);

}  // namespace stepsim::workloads::kernels::calibration
