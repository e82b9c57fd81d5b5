#include "gemm_calibration.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <sstream>

#include "sim/common/input_error.hpp"
#include "sim/common/text_file.hpp"

namespace stepsim::workloads::kernels::calibration {

namespace {

constexpr double kTera = 1e12;
constexpr GemmDtype kDtypes[] = {GemmDtype::kBf16, GemmDtype::kTf32, GemmDtype::kFp8};

std::vector<GemmTableRow> half(const std::vector<GemmTableRow>& rows, bool holdout) {
  std::vector<GemmTableRow> out;
  for (const GemmTableRow& r : rows) {
    if (is_holdout_shape(r.shape) == holdout) out.push_back(r);
  }
  return out;
}

// Fits `start` to the fit half of `rows`: everything on bf16, then the other ceilings alone.
GemmDeviceParams fit_device(GemmDeviceParams p, const std::vector<GemmTableRow>& rows,
                            const std::string& fp8_rows, std::vector<FitReport>& reports) {
  const std::vector<GemmTableRow> fit_rows = half(rows, false);
  const std::vector<GemmTableRow> hold_rows = half(rows, true);
  p = fit_gemm_params(p, fit_rows, GemmDtype::kBf16, GemmFitScope::kTile);
  p = fit_gemm_params(p, fit_rows, GemmDtype::kTf32, GemmFitScope::kCeilingOnly);
  p = fit_gemm_params(p, fit_rows, GemmDtype::kFp8, GemmFitScope::kCeilingOnly);
  for (GemmDtype d : kDtypes) {
    FitReport r;
    r.device = p.device;
    r.dtype = d;
    r.rows = d == GemmDtype::kBf16  ? "fit half: the four tile parameters"
             : d == GemmDtype::kFp8 ? "fit half" + fp8_rows + ": ceiling only"
                                    : "fit half: ceiling only";
    r.fit = gemm_model_error(p, fit_rows, d);
    r.holdout = gemm_model_error(p, hold_rows, d);
    reports.push_back(r);
  }
  return p;
}

}  // namespace

const GemmTableRow& fastest_row(const std::vector<GemmTableRow>& rows, GemmDtype d) {
  const GemmTableRow* best = nullptr;
  for (const GemmTableRow& r : rows) {
    if (r.dtype == d && (!best || r.flops_per_s() > best->flops_per_s())) best = &r;
  }
  if (!best) throw InputError(fmt::format("no {} rows", to_string(d)));
  return *best;
}

GemmDeviceParams fit_start(const std::string& device, const std::vector<GemmTableRow>& rows) {
  GemmDeviceParams p = *gemm_params_preset(device);
  p.ceiling_bf16_flops_per_s = fastest_row(rows, GemmDtype::kBf16).flops_per_s();
  p.ceiling_tf32_flops_per_s = p.ceiling_bf16_flops_per_s / 2;
  p.ceiling_fp8_flops_per_s = p.ceiling_bf16_flops_per_s * 2;
  p.tile_rate_over_ceiling = 1;
  p.tile_k_overhead = 128;
  p.tile_balance_intensity = 64;
  p.kernel_fixed_cost = Time::us(5);
  return p;
}

Calibration calibrate(const std::string& source_dir) {
  const std::string dir = source_dir + "/validation/data/kernels/";
  Calibration c;

  // H100: XLA's sm_90 table, the unreliable FP8 rows left out.
  {
    const std::string name = "xla_matmul_sm_90.csv";
    const GemmTable all = GemmTable::from_csv(config::read_text_file(dir + name, name), name);
    const GemmTable reliable = without_unreliable_sm90_fp8_rows(all);
    c.h100_fp8_unreliable_rows = static_cast<int>(all.rows().size() - reliable.rows().size());
    c.h100_rows = reliable.rows();
    c.h100 = fit_device(fit_start("h100", c.h100_rows), c.h100_rows, " (reliable rows)", c.fits);
  }
  // B200: XLA's sm_100_B200 table.
  {
    const std::string name = "xla_matmul_sm_100_B200.csv";
    c.b200_rows = GemmTable::from_csv(config::read_text_file(dir + name, name), name).rows();
    c.b200 = fit_device(fit_start("b200", c.b200_rows), c.b200_rows, "", c.fits);
  }
  // B200 from H100's fit: 148 SMs and each ceiling B200's fastest row of that type.
  {
    GemmDeviceParams p = c.h100;
    p.device = "b200 (from h100)";
    p.sm_count = 148;
    p.hbm_bandwidth = c.b200.hbm_bandwidth;
    for (GemmDtype d : kDtypes) {
      p.set_ceiling_flops_per_s(d, fastest_row(c.b200_rows, d).flops_per_s());
    }
    c.b200_from_h100 = p;
    for (GemmDtype d : kDtypes)
      c.b200_transfer.push_back(gemm_model_error(p, c.b200_rows, d));
  }
  // A100: H100's fit with 108 SMs, the bf16 ceiling from the MAMF best shape, tf32 half of it.
  const YAML::Node a100 = YAML::LoadFile(dir + "a100_gemm.yaml");
  {
    GemmDeviceParams p = c.h100;
    const GemmDeviceParams preset = *gemm_params_preset("a100");
    p.device = "a100";
    p.sm_count = preset.sm_count;
    p.hbm_bandwidth = preset.hbm_bandwidth;
    p.ceiling_fp8_flops_per_s = 0;
    const YAML::Node sxm = a100["mamf"]["rows"][0];  // A100 SXM
    p.ceiling_bf16_flops_per_s = sxm["mamf_tflops"].as<double>() * kTera;
    p.ceiling_tf32_flops_per_s = p.ceiling_bf16_flops_per_s / 2;
    c.a100 = p;
    const YAML::Node sweep = a100["square_gemm_sweep_read_from_chart"];
    const YAML::Node mnk = sweep["mnk"];
    for (const auto& [series, dtype] :
         {std::pair{"bf16_tc", GemmDtype::kBf16}, std::pair{"tf32_tc", GemmDtype::kTf32}}) {
      const YAML::Node values = sweep["tflops"][series];
      for (std::size_t i = 0; i < mnk.size(); ++i) {
        if (values[i].IsNull()) continue;
        const std::int64_t v = mnk[i].as<std::int64_t>();
        PointCheck pc;
        pc.label = series;
        pc.shape = {v, v, v, 1};
        pc.dtype = dtype;
        pc.measured_flops_per_s = values[i].as<double>() * kTera;
        pc.model_flops_per_s = GemmModel(p).model_estimate(pc.shape, dtype).flops_per_s;
        c.a100_chart.push_back(pc);
      }
    }
  }
  // H800: the h800 preset (H100's parameters) against DeepGEMM's FP8 table (last full README).
  {
    const YAML::Node dg = YAML::LoadFile(dir + "deepgemm_fp8_h800.yaml")["tables"][1];
    const GemmModel h800(*gemm_params_preset("h800"));
    for (const char* layout : {"normal", "grouped_contiguous", "grouped_masked"}) {
      for (const YAML::Node& r : dg[layout]) {
        PointCheck pc;
        pc.label = layout;
        pc.dtype = GemmDtype::kFp8;
        pc.shape.batch = r["groups"] ? r["groups"].as<std::int64_t>() : 1;
        pc.shape.m = r["groups"] ? r["m_per_group"].as<std::int64_t>() : r["m"].as<std::int64_t>();
        pc.shape.n = r["n"].as<std::int64_t>();
        pc.shape.k = r["k"].as<std::int64_t>();
        pc.measured_flops_per_s = pc.shape.flops() / (r["time_us"].as<double>() * 1e-6);
        pc.model_flops_per_s = h800.model_estimate(pc.shape, GemmDtype::kFp8).flops_per_s;
        c.h800_deepgemm.push_back(pc);
      }
    }
  }
  // H200 (measured for this project): the layer-shape rows (set "model") of gemm.csv.
  {
    const std::string name = "h200/gemm.csv";
    const std::string text = config::read_text_file(dir + name, name);
    std::istringstream in(text);
    std::string line, kept;
    std::getline(in, line);
    kept = line + "\n";
    while (std::getline(in, line))
      kept += line.rfind("model,", 0) == 0 ? line + "\n" : "#\n";
    c.h200_rows = parse_gemm_csv_rows(kept, "validation/data/kernels/" + name);
  }
  return c;
}

SustainedScale sustained_scale(const GemmDeviceParams& params,
                               const std::vector<GemmTableRow>& rows, GemmDtype dtype) {
  const GemmModel model(params);
  std::vector<double> fit;
  std::vector<std::pair<double, double>> check;  // (model time, measured time)
  for (const GemmTableRow& r : rows) {
    if (r.dtype != dtype) continue;
    const double m = model.model_estimate(r.shape, dtype).time.seconds();
    const double t = r.time.seconds();
    if ((fit.size() + check.size()) % 2 == 0) {
      fit.push_back(t / m);
    } else {
      check.emplace_back(m, t);
    }
  }
  SustainedScale s;
  s.dtype = dtype;
  s.fit_rows = static_cast<int>(fit.size());
  s.check_rows = static_cast<int>(check.size());
  if (fit.empty()) return s;
  std::sort(fit.begin(), fit.end());
  const std::size_t mid = fit.size() / 2;
  s.scale = fit.size() % 2 == 1 ? fit[mid] : 0.5 * (fit[mid - 1] + fit[mid]);
  for (const auto& [m, t] : check) {
    s.check_mean_abs_unscaled += std::abs(m / t - 1);
    s.check_mean_abs += std::abs(m * s.scale / t - 1);
  }
  if (!check.empty()) {
    s.check_mean_abs_unscaled /= static_cast<double>(check.size());
    s.check_mean_abs /= static_cast<double>(check.size());
  }
  return s;
}

}  // namespace stepsim::workloads::kernels::calibration
