// Fitting a GemmDeviceParams to measured rows, and its error on rows: the calibration behind the
// presets (gemm_model.cpp) and docs/gemm-model.md's tables (tests/kernels/gemm_holdout_main.cpp).
//
// The fit minimises the sum over rows of (log model time - log measured time)^2 by Nelder-Mead in
// the logarithms of the parameters, from the start values given, for a fixed number of steps:
// deterministic, the same rows give the same parameters.
#pragma once

#include <vector>

#include "workloads/kernels/gemm_model.hpp"
#include "workloads/kernels/gemm_table.hpp"

namespace stepsim::workloads::kernels {

// The deterministic half of a grid held out from fits: a checkerboard, the rows whose
// floor(log2 m) + floor(log2 n) + floor(log2 k) + floor(log2 batch) is odd.
bool is_holdout_shape(const GemmShape& shape);

// Which parameters a fit moves.
enum class GemmFitScope : std::uint8_t {
  kTile,         // tile_rate_over_ceiling, tile_k_overhead, tile_balance_intensity,
                 // kernel_fixed_cost; the ceiling stays as given (the best measured rate)
  kCeilingOnly,  // the ceiling of the dtype; the rest stays as given
};

// `start` with the parameters of `scope` fitted to the rows of `dtype` (other rows ignored).
// REQUIRES: at least one row of `dtype`; start's values of the fitted parameters > 0.
GemmDeviceParams fit_gemm_params(GemmDeviceParams start, const std::vector<GemmTableRow>& rows,
                                 GemmDtype dtype, GemmFitScope scope);

// The model's relative error |model / measured - 1| over the rows of `dtype` (the model alone,
// never a table).
struct GemmErrorStats {
  int rows = 0;
  double mean_abs = 0;
  double mean_signed = 0;  // mean of model / measured - 1 (the bias)
  double worst_abs = 0;
  double worst_signed = 0;  // model / measured - 1 at the worst row
  GemmShape worst_shape;
};
GemmErrorStats gemm_model_error(const GemmDeviceParams& params,
                                const std::vector<GemmTableRow>& rows, GemmDtype dtype);

}  // namespace stepsim::workloads::kernels
