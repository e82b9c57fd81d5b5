#include "workloads/kernels/gemm_fit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <numeric>

#include "sim/common/input_error.hpp"

namespace stepsim::workloads::kernels {

namespace {

int floor_log2(std::int64_t x) {
  return std::bit_width(static_cast<std::uint64_t>(x)) - 1;
}

// Nelder-Mead with the textbook coefficients (reflection 1, expansion 2, contraction 1/2,
// shrink 1/2), a fixed number of steps.
std::vector<double> nelder_mead(const std::function<double(const std::vector<double>&)>& f,
                                std::vector<double> x0, double step, int iterations) {
  const std::size_t n = x0.size();
  std::vector<std::vector<double>> pts(n + 1, x0);
  for (std::size_t i = 0; i < n; ++i)
    pts[i + 1][i] += step;
  std::vector<double> vals(n + 1);
  for (std::size_t i = 0; i <= n; ++i)
    vals[i] = f(pts[i]);
  std::vector<std::size_t> order(n + 1);
  for (int it = 0; it < iterations; ++it) {
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return vals[a] < vals[b]; });
    std::vector<std::vector<double>> p2;
    std::vector<double> v2;
    for (std::size_t i : order) {
      p2.push_back(pts[i]);
      v2.push_back(vals[i]);
    }
    pts = std::move(p2);
    vals = std::move(v2);
    std::vector<double> c(n, 0.0);
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < n; ++j)
        c[j] += pts[i][j] / static_cast<double>(n);
    }
    const auto along = [&](double t) {
      std::vector<double> x(n);
      for (std::size_t j = 0; j < n; ++j)
        x[j] = c[j] + t * (pts[n][j] - c[j]);
      return x;
    };
    const std::vector<double> xr = along(-1.0);
    const double fr = f(xr);
    if (fr < vals[0]) {
      const std::vector<double> xe = along(-2.0);
      const double fe = f(xe);
      if (fe < fr) {
        pts[n] = xe;
        vals[n] = fe;
      } else {
        pts[n] = xr;
        vals[n] = fr;
      }
    } else if (fr < vals[n - 1]) {
      pts[n] = xr;
      vals[n] = fr;
    } else {
      const std::vector<double> xc = along(0.5);
      const double fc = f(xc);
      if (fc < vals[n]) {
        pts[n] = xc;
        vals[n] = fc;
      } else {
        for (std::size_t i = 1; i <= n; ++i) {
          for (std::size_t j = 0; j < n; ++j)
            pts[i][j] = pts[0][j] + 0.5 * (pts[i][j] - pts[0][j]);
          vals[i] = f(pts[i]);
        }
      }
    }
  }
  const auto best = std::min_element(vals.begin(), vals.end()) - vals.begin();
  return pts[static_cast<std::size_t>(best)];
}

}  // namespace

bool is_holdout_shape(const GemmShape& s) {
  return (floor_log2(s.m) + floor_log2(s.n) + floor_log2(s.k) + floor_log2(s.batch)) % 2 == 1;
}

GemmDeviceParams fit_gemm_params(GemmDeviceParams start, const std::vector<GemmTableRow>& rows,
                                 GemmDtype dtype, GemmFitScope scope) {
  std::vector<const GemmTableRow*> mine;
  for (const GemmTableRow& r : rows) {
    if (r.dtype == dtype) mine.push_back(&r);
  }
  if (mine.empty()) {
    throw InputError(
        fmt::format("no {} rows to fit the GEMM model of {} to", to_string(dtype), start.device));
  }
  const auto apply = [&](const std::vector<double>& x) {
    GemmDeviceParams p = start;
    if (scope == GemmFitScope::kCeilingOnly) {
      p.set_ceiling_flops_per_s(dtype, std::exp(x[0]) * 1e12);
    } else {
      p.tile_rate_over_ceiling = std::exp(x[0]);
      p.tile_k_overhead = std::exp(x[1]);
      p.tile_balance_intensity = std::exp(x[2]);
      p.kernel_fixed_cost = Time::from_seconds(std::exp(x[3]) * 1e-6);
    }
    return p;
  };
  const auto loss = [&](const std::vector<double>& x) {
    // Keep the search where the model is defined (Time needs a finite, representable time).
    for (double v : x) {
      if (!(std::abs(v) < 40)) return 1e300;
    }
    const GemmModel model(apply(x));
    double sum = 0;
    for (const GemmTableRow* r : mine) {
      const double d =
          std::log(model.model_estimate(r->shape, dtype).time.seconds() / r->time.seconds());
      sum += d * d;
    }
    return sum;
  };
  std::vector<double> x0;
  if (scope == GemmFitScope::kCeilingOnly) {
    x0.push_back(std::log(start.ceiling_flops_per_s(dtype) * 1e-12));
  } else {
    x0.push_back(std::log(start.tile_rate_over_ceiling));
    x0.push_back(std::log(start.tile_k_overhead));
    x0.push_back(std::log(start.tile_balance_intensity));
    x0.push_back(std::log(start.kernel_fixed_cost.microseconds()));
  }
  const int iterations = scope == GemmFitScope::kTile ? 600 : 120;
  return apply(nelder_mead(loss, x0, 0.2, iterations));
}

GemmErrorStats gemm_model_error(const GemmDeviceParams& params,
                                const std::vector<GemmTableRow>& rows, GemmDtype dtype) {
  const GemmModel model(params);
  GemmErrorStats s;
  double sum = 0;
  double sum_signed = 0;
  for (const GemmTableRow& r : rows) {
    if (r.dtype != dtype) continue;
    const double e = model.model_estimate(r.shape, dtype).time.seconds() / r.time.seconds() - 1;
    sum += std::abs(e);
    sum_signed += e;
    ++s.rows;
    if (std::abs(e) > s.worst_abs) {
      s.worst_abs = std::abs(e);
      s.worst_signed = e;
      s.worst_shape = r.shape;
    }
  }
  if (s.rows > 0) {
    s.mean_abs = sum / s.rows;
    s.mean_signed = sum_signed / s.rows;
  }
  return s;
}

}  // namespace stepsim::workloads::kernels
