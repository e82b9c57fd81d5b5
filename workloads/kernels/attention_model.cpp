#include "workloads/kernels/attention_model.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

namespace stepsim::workloads::kernels {

namespace {

constexpr double kTera = 1e12;

// Hopper: cuDNN's fused attention measured on one H200 (the H100's SMs and clocks), BF16, 32
// heads, batch x seq = 32,768 tokens (u = 8,192), median times; backward = (fwd+bwd) - fwd.
// validation/data/kernels/h200/attention.csv, impl cudnn (scripts/gpu/kernels.py, 2026-12-04).
std::vector<AttentionRatePoint> hopper_points() {
  struct Row {
    std::int64_t head_dim;
    bool causal;
    double fwd[7];
    double bwd[7];
  };
  // seq 512, 1024, 2048, 4096, 8192, 16384, 32768; TFLOP/s, derived from the CSV's flops/time_s
  // (rounded to 1 TFLOP/s).
  const Row rows[] = {
      {64, false, {401, 447, 470, 479, 492, 478, 459}, {283, 367, 427, 460, 433, 444, 454}},
      {64, true, {276, 343, 375, 415, 445, 461, 459}, {172, 254, 340, 398, 430, 425, 412}},
      {128, false, {566, 630, 664, 669, 687, 611, 589}, {360, 461, 517, 495, 510, 540, 549}},
      {128, true, {380, 477, 549, 603, 636, 605, 589}, {225, 335, 433, 458, 483, 518, 535}},
  };
  std::vector<AttentionRatePoint> points;
  for (const Row& r : rows) {
    for (int i = 0; i < 7; ++i) {
      const std::int64_t seq = std::int64_t{512} << i;
      points.push_back({r.head_dim, r.causal, seq, r.fwd[i] * kTera, r.bwd[i] * kTera, 8192});
    }
  }
  return points;
}

// A100: FlashAttention-2, forward + backward (the only A100 figure), FP16, batch x seq = 16,384
// tokens, hidden 2,048 (32 heads of 64, 16 of 128: u = 4,096 and 2,048); the one rate serves
// both passes. validation/data/kernels/attention.yaml, fa2_a100_fwd_bwd, flashattention2
// (read_from_figure). Panel b's 512-token label is hidden: that series starts at 1,024.
std::vector<AttentionRatePoint> a100_points() {
  struct Row {
    std::int64_t head_dim;
    bool causal;
    double tflops[6];
  };
  const Row rows[] = {
      {64, false, {132, 153, 162, 171, 175, 176}},
      {128, false, {0, 173, 187, 196, 201, 203}},
      {64, true, {88, 119, 140, 156, 165, 171}},
      {128, true, {99, 133, 155, 173, 182, 189}},
  };
  std::vector<AttentionRatePoint> points;
  for (const Row& r : rows) {
    const double units = r.head_dim == 64 ? 4096 : 2048;
    for (int i = 0; i < 6; ++i) {
      if (r.tflops[i] <= 0) continue;
      const std::int64_t seq = std::int64_t{512} << i;
      points.push_back(
          {r.head_dim, r.causal, seq, r.tflops[i] * kTera, r.tflops[i] * kTera, units});
    }
  }
  return points;
}

AttentionRates hopper_rates() {
  AttentionRates r;
  r.kernel = "cuDNN fused attention";
  r.source =
      "validation/data/kernels/h200/attention.csv (cuDNN, one H200, 32 heads, u = 8,192; u0 = "
      "214 fitted to its 1 x 8 to 1 x 128 heads rows at 4,096 tokens)";
  r.calibrated = true;
  r.points = hopper_points();
  r.half_units = 214;
  return r;
}

}  // namespace

double AttentionShape::forward_flops() const {
  const double pairs = static_cast<double>(seq_q) * static_cast<double>(seq_kv);
  const double full = 2.0 * static_cast<double>(batch) * static_cast<double>(heads) * pairs *
                      static_cast<double>(head_dim_qk + head_dim_v);
  if (!causal) return full;
  // The masked part of a square (or wider) score matrix: each query sees the keys up to its
  // own position among the last seq_q keys.
  const double q = static_cast<double>(seq_q);
  const double kv = static_cast<double>(seq_kv);
  const double visible = q * (kv - q) + q * (q + 1) / 2.0;
  return full * visible / pairs;
}

AttentionModel::AttentionModel(AttentionRates rates) : rates_(std::move(rates)) {
  if (rates_.points.empty()) throw std::invalid_argument("AttentionModel: no rate points");
}

std::pair<double, double> AttentionModel::table_rate(std::int64_t head_dim, bool causal,
                                                     std::int64_t seq, bool backward) const {
  // The series of each head dimension (of this mask), by sequence.
  std::map<std::int64_t, std::map<std::int64_t, const AttentionRatePoint*>> series;
  for (const AttentionRatePoint& p : rates_.points) {
    if (p.causal == causal) series[p.head_dim][p.seq] = &p;
  }
  if (series.empty()) {
    for (const AttentionRatePoint& p : rates_.points)
      series[p.head_dim][p.seq] = &p;
  }
  auto along_seq = [&](const std::map<std::int64_t, const AttentionRatePoint*>& s) {
    auto rate = [&](const AttentionRatePoint* p) {
      return backward ? p->backward_flops_per_s : p->forward_flops_per_s;
    };
    const auto first = s.begin();
    if (seq <= first->first) {
      // Shorter than the table: the rate falls in proportion to the sequence.
      return std::pair{
          rate(first->second) * static_cast<double>(seq) / static_cast<double>(first->first),
          first->second->units};
    }
    const auto hi = s.lower_bound(seq);
    if (hi == s.end()) return std::pair{rate(s.rbegin()->second), s.rbegin()->second->units};
    if (hi->first == seq) return std::pair{rate(hi->second), hi->second->units};
    const auto lo = std::prev(hi);
    const double t =
        (std::log2(static_cast<double>(seq)) - std::log2(static_cast<double>(lo->first))) /
        (std::log2(static_cast<double>(hi->first)) - std::log2(static_cast<double>(lo->first)));
    return std::pair{rate(lo->second) + t * (rate(hi->second) - rate(lo->second)),
                     lo->second->units + t * (hi->second->units - lo->second->units)};
  };
  const auto hi = series.lower_bound(head_dim);
  if (hi == series.begin()) return along_seq(hi->second);
  if (hi == series.end()) return along_seq(series.rbegin()->second);
  if (hi->first == head_dim) return along_seq(hi->second);
  const auto lo = std::prev(hi);
  const auto a = along_seq(lo->second);
  const auto b = along_seq(hi->second);
  const double t =
      static_cast<double>(head_dim - lo->first) / static_cast<double>(hi->first - lo->first);
  return {a.first + t * (b.first - a.first), a.second + t * (b.second - a.second)};
}

double AttentionModel::flops_per_s(const AttentionShape& shape, KernelPass pass) const {
  const bool backward = pass != KernelPass::kForward;
  // The query/key head size sets the tile work; MLA's wider keys use the table's widest heads.
  const auto [rate, reference_units] =
      table_rate(shape.head_dim_qk, shape.causal, std::max(shape.seq_q, shape.seq_kv), backward);
  const double tiles = static_cast<double>((shape.seq_q + 127) / 128);
  const double units = static_cast<double>(shape.batch * shape.heads) * tiles;
  const double u0 = rates_.half_units;
  const double occupancy = (units / (units + u0)) / (reference_units / (reference_units + u0));
  return rate * occupancy * rates_.scale;
}

Time AttentionModel::time(const AttentionShape& shape, KernelPass pass) const {
  if (pass == KernelPass::kBackwardWeight) return Time::zero();
  const double flops = shape.forward_flops() * (pass == KernelPass::kForward ? 1.0 : 2.5);
  if (flops <= 0) return Time::zero();
  return Time::from_seconds(flops / flops_per_s(shape, pass));
}

std::optional<AttentionModel> attention_model_preset(std::string_view device) {
  if (device == "h100" || device == "h200" || device == "h800") {
    return AttentionModel(hopper_rates());
  }
  if (device == "a100") {
    AttentionRates r;
    r.kernel = "FlashAttention-2";
    r.source =
        "validation/data/kernels/attention.yaml fa2_a100_fwd_bwd (FlashAttention-2 paper, figure "
        "4, read from the figure): forward + backward rate for both passes; u0 = 214 x 108 / 132 "
        "SMs (the H200 fit scaled to the A100's SMs)";
    r.calibrated = true;
    r.points = a100_points();
    r.half_units = 214.0 * 108.0 / 132.0;
    return AttentionModel(std::move(r));
  }
  if (device == "b200") {
    AttentionRates r = hopper_rates();
    r.kernel = "cuDNN fused attention (Hopper's rates scaled)";
    r.source =
        "no public B200 attention table: the H200's cuDNN rates x 2,250 / 989 (the dense BF16 "
        "peaks); uncalibrated";
    r.calibrated = false;
    r.scale = 2250.0 / 989.0;
    r.half_units = 214.0 * 148.0 / 132.0;
    return AttentionModel(std::move(r));
  }
  if (device == "ascend-910c") {
    AttentionRates r;
    r.kernel = "fused attention (no public kernel data)";
    r.source =
        "no public Ascend attention measurement: 45% of the 752 TFLOP/s BF16 peak, flat; "
        "uncalibrated";
    r.calibrated = false;
    for (bool causal : {false, true}) {
      r.points.push_back({128, causal, 4096, 0.45 * 752 * kTera, 0.45 * 752 * kTera, 8192});
    }
    return AttentionModel(std::move(r));
  }
  return std::nullopt;
}

}  // namespace stepsim::workloads::kernels
