#include "workloads/compute_model.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "sim/common/input_error.hpp"
#include "sim/common/text_file.hpp"
#include "workloads/kernels/gemm_table.hpp"

namespace stepsim::workloads {

double ComputeModel::peak_flops_per_s(ComputeKind k) const {
  const bool linear = k == ComputeKind::kGemm || k == ComputeKind::kGroupedGemm;
  if (precision == Precision::kFp8 && !linear) return device.peak_flops_per_s(Precision::kBf16);
  return device.peak_flops_per_s(precision);
}

std::optional<Time> ComputeModel::measured_time(OpName name, Phase phase) const {
  if (kernel_times.empty()) return std::nullopt;
  // A recomputed forward takes the forward's measured time.
  const Phase key_phase = phase == Phase::kRecompute ? Phase::kForward : phase;
  if (auto it = kernel_times.find({name, key_phase}); it != kernel_times.end()) return it->second;
  return std::nullopt;
}

Time ComputeModel::duration(OpName name, Phase phase, ComputeKind kind, double flops,
                            double bytes) const {
  if (auto t = measured_time(name, phase)) return *t;
  const double eff = efficiency_of(kind);
  const double compute_s = flops / (peak_flops_per_s(kind) * eff);
  const double memory_eff = memory_efficiency > 0 ? memory_efficiency : eff;
  const double memory_s = bytes / (device.hbm_bandwidth.value() * memory_eff);
  return Time::from_seconds(std::max(compute_s, memory_s)) + launch_overhead;
}

double ComputeModel::comm_sm_share() const {
  if (!kernels || comm_sms <= 0) return 0.0;
  const int sms = kernels->gemm().params().sm_count;
  return sms > comm_sms ? static_cast<double>(comm_sms) / sms : 0.0;
}

Time ComputeModel::duration(OpName name, Phase phase, ComputeKind kind, const OpCost& cost) const {
  if (!kernels || cost.kernels.empty()) return duration(name, phase, kind, cost.flops, cost.bytes);
  if (auto t = measured_time(name, phase)) return *t;
  return kernels->operation_time(cost.kernels, cost.pass);
}

namespace {

kernels::GemmDtype linear_dtype(Precision p) {
  switch (p) {
    case Precision::kFp8:
      return kernels::GemmDtype::kFp8;
    case Precision::kFp32:
      return kernels::GemmDtype::kTf32;
    case Precision::kBf16:
    case Precision::kFp16:
      break;
  }
  return kernels::GemmDtype::kBf16;
}

double read_flop_rate(const config::Node& n) {
  const auto rate = parse_flop_rate(n.as_string());
  if (!rate) n.fail("a FLOP rate with a unit, such as '989 TFLOP/s'");
  return *rate;
}

std::vector<std::string> op_names() {
  std::vector<std::string> v;
  for (int i = 0; i < static_cast<int>(OpName::kCount); ++i) {
    v.emplace_back(to_string(static_cast<OpName>(i)));
  }
  return v;
}

void read_kernel_table(const config::Node& file_node, ComputeModel& model) {
  const auto doc = config::Document::load_file(file_node.as_path(), file_node);
  const config::Node root = doc.root();
  root.allow_keys({"kernels"});
  const auto names = op_names();
  for (const config::Node& row : root.at("kernels").items()) {
    row.allow_keys({"op", "phase", "time"});
    const std::string op = row.at("op").as_choice(names);
    const std::string phase = row.at("phase").as_choice({"fwd", "bwd", "optimizer"});
    const auto index = std::find(names.begin(), names.end(), op) - names.begin();
    const Phase p = phase == "fwd"   ? Phase::kForward
                    : phase == "bwd" ? Phase::kBackward
                                     : Phase::kOptimizer;
    model.kernel_times[{static_cast<OpName>(index), p}] = row.at("time").as_time();
  }
}

}  // namespace

ComputeModel default_compute_model(const DeviceSpec& device, Precision precision) {
  static_assert(static_cast<std::size_t>(ComputeKind::kCount) == 5,
                "DeviceSpec::efficiency lists one efficiency per ComputeKind");
  ComputeModel model;
  model.device = device;
  model.precision = precision;
  if (device.efficiency) model.efficiency = *device.efficiency;
  if (device.launch_overhead) model.launch_overhead = *device.launch_overhead;
  model.kernels = kernels::kernel_timer_preset(device.name);
  if (model.kernels) model.kernels->set_linear_dtype(linear_dtype(precision));
  return model;
}

ComputeModel parse_compute(const config::Node& compute, Precision precision) {
  compute.allow_keys({"device", "peak", "hbm_bandwidth", "hbm_capacity", "efficiency",
                      "launch_overhead", "kernel_times", "model", "attention", "gemm_table",
                      "comm_sms"});
  ComputeModel model;
  model.precision = precision;
  if (auto dev = compute.find("device")) {
    model = default_compute_model(find_device_preset(dev->as_choice(device_preset_names())).value(),
                                  precision);
  } else {
    model.device.name = "custom";
    model.device.source = "inline in the scenario";
  }
  if (auto peak = compute.find("peak")) {
    peak->allow_keys({"fp32", "bf16", "fp16", "fp8"});
    if (auto n = peak->find("fp32")) model.device.peak_fp32_flops_per_s = read_flop_rate(*n);
    if (auto n = peak->find("bf16")) model.device.peak_bf16_flops_per_s = read_flop_rate(*n);
    if (auto n = peak->find("fp16")) model.device.peak_fp16_flops_per_s = read_flop_rate(*n);
    if (auto n = peak->find("fp8")) model.device.peak_fp8_flops_per_s = read_flop_rate(*n);
  }
  if (auto n = compute.find("hbm_bandwidth")) model.device.hbm_bandwidth = n->as_bandwidth();
  if (auto n = compute.find("hbm_capacity")) model.device.hbm_capacity = n->as_bytes(Bytes(1));
  if (model.device.hbm_bandwidth.value() <= 0) {
    compute.fail_with("no device preset and no 'hbm_bandwidth': give one of them");
  }
  if (model.device.hbm_capacity.count() <= 0) {
    compute.fail_with("no device preset and no 'hbm_capacity': give one of them");
  }
  if (model.device.peak_flops_per_s(precision) <= 0) {
    compute.fail_with(fmt::format(
        "device '{}' has no {} peak FLOP rate: choose another training.precision or give "
        "compute.peak.{}",
        model.device.name, to_string(precision), to_string(precision)));
  }
  if (precision == Precision::kFp8 && model.device.peak_bf16_flops_per_s <= 0) {
    compute.fail_with(
        "FP8 training also needs compute.peak.bf16 (attention and element-wise "
        "operations run in BF16)");
  }
  if (auto eff = compute.find("efficiency")) {
    std::vector<std::string> kinds;
    for (int i = 0; i < static_cast<int>(ComputeKind::kCount); ++i) {
      kinds.emplace_back(to_string(static_cast<ComputeKind>(i)));
    }
    eff->allow_keys(kinds);
    for (std::size_t i = 0; i < kinds.size(); ++i) {
      if (auto n = eff->find(kinds[i])) {
        const double e = n->as_double(0.0, 1.0);
        if (e <= 0.0) n->fail("an efficiency in (0, 1]");
        model.efficiency[i] = e;
      }
    }
  }
  if (auto n = compute.find("launch_overhead")) model.launch_overhead = n->as_time();
  if (auto n = compute.find("kernel_times")) read_kernel_table(*n, model);
  if (auto n = compute.find("comm_sms")) model.comm_sms = static_cast<int>(n->as_int(0, 1024));
  if (auto n = compute.find("attention")) {
    model.fused_attention = n->as_choice({"fused", "unfused"}) == "fused";
  }
  // The default: the kernel-level model where the device's roofline efficiencies are generic
  // assumptions (no calibrated efficiencies) and its GEMMs are calibrated from kernel data: a100,
  // b200. The roofline where the efficiencies were calibrated (the Hopper presets, on the
  // Megatron-LM H100 table, until the kernel-level model holds that table) or no kernel data
  // exists (ascend-910c); docs/workloads.md, "Kernel-level model". Numbers given for the peaks,
  // the bandwidth or the efficiencies ask for the roofline.
  const bool asks_roofline =
      compute.has("efficiency") || compute.has("peak") || compute.has("hbm_bandwidth");
  const bool kernels_by_default =
      model.kernels && !model.device.efficiency && model.kernels->gemm().params().calibrated;
  std::string choice = kernels_by_default && !asks_roofline ? "kernels" : "roofline";
  if (auto n = compute.find("model")) {
    choice = n->as_choice({"kernels", "roofline"});
    if (choice == "kernels" && !model.kernels) {
      n->fail_with(fmt::format(
          "device '{}' has no kernel-level model (it is not a preset: {}); use 'roofline'",
          model.device.name, fmt::join(device_preset_names(), ", ")));
    }
  }
  if (choice == "kernels") {
    for (const char* key : {"efficiency", "peak", "hbm_bandwidth"}) {
      if (auto n = compute.find(key)) {
        n->fail_with(fmt::format(
            "compute.{} sets the roofline; the kernel-level model (compute.model: kernels) "
            "times kernels from the device's tables: give a gemm_table or kernel_times instead",
            key));
      }
    }
  }
  if (choice == "roofline") model.kernels.reset();
  if (auto n = compute.find("gemm_table")) {
    if (!model.kernels) {
      n->fail_with("a GEMM table needs the kernel-level model (compute.model: kernels)");
    }
    const std::string text = config::read_text_file(n->as_path(), n->location() + ": " + n->path());
    kernels::GemmModel gemm = model.kernels->gemm();
    gemm.set_table(std::make_shared<const kernels::GemmTable>(
        kernels::GemmTable::from_csv(text, n->as_path().string())));
    model.kernels->set_gemm(std::move(gemm));
    model.kernels->set_table_is_sustained(true);  // the user's own measurement
  }
  return model;
}

}  // namespace stepsim::workloads
