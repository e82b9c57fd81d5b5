// The time of one matrix product (GEMM) on one GPU, from its shape: a model of how the GPU runs
// it (output tiles in waves over the streaming multiprocessors, a per-device ceiling for large,
// well-shaped products, the HBM side for skinny ones, a fixed cost per kernel), and, where the
// device has a measured table, the table inside its range.
//
// The model, for a product of `batch` x (m x k) x (k x n) in data type d:
//   for each candidate CTA tile (tm x tn) of `tile_shapes`:
//     tiles  = ceil(m / tm) * ceil(n / tn) * batch
//     waves  = ceil(tiles / sm_count)
//     tile   = (k + tile_k_overhead) * 2 tm tn / (ceiling_d * tile_rate_over_ceiling / sm_count)
//              * max(1, tile_balance_intensity / (2 tm tn / (tm + tn)))
//   compute = max(min over tiles of waves * tile,  2 m n k batch / ceiling_d)
//   memory = (m k + k n + m n) * element_bytes(d) * batch / hbm_bandwidth
//   time   = max(compute, memory) + kernel_fixed_cost
// `2 tm tn / (tm + tn)` is the tile's FLOP per operand element loaded; below the balance intensity
// the tile is load-bound and runs proportionally slower (small tiles, hence small m or n, pay).
// The per-tile k overhead makes small k slow (the ramp); waves make one tile more than a wave cost
// a whole wave. The ceiling is the best rate measured on the device (its fastest table row, or a
// best-shape search): the tile loop's own rate at infinite k may lie above it (the ramp's fit puts
// it there), but no product runs faster than the ceiling.
//
// Parameters are set per device from kernel-level tables only (validation/data/kernels/; each
// preset's `source` names its rows). docs/gemm-model.md describes the model, its fit and its
// accuracy.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/common/units.hpp"

namespace stepsim::workloads::kernels {

// The data type of a product's inputs (outputs are BF16, accumulation FP32). kTf32 is FP32
// inputs on the tensor cores.
enum class GemmDtype : std::uint8_t { kBf16, kFp8, kTf32 };
std::string_view to_string(GemmDtype d);  // "bf16", "fp8", "tf32"
// Bytes of one input element: 2, 1, 4.
int element_bytes(GemmDtype d);

// out[batch][m][n] = lhs[batch][m][k] x rhs[batch][k][n]. `batch` independent products of one
// shape (a batched or grouped GEMM with equal groups).
struct GemmShape {
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  std::int64_t batch = 1;
  double flops() const;  // 2 m n k batch
  auto operator<=>(const GemmShape&) const = default;
};

// Where a time came from.
enum class GemmSource : std::uint8_t { kModel, kTable };

struct GemmEstimate {
  Time time;
  GemmSource source = GemmSource::kModel;
  bool memory_bound = false;  // the HBM side of the model set the time (false for table times)
  double flops_per_s = 0;     // achieved rate, 2 m n k batch / time
};

// One candidate CTA output tile, in output elements.
struct GemmTileShape {
  int m = 0;
  int n = 0;
};

// The candidate tiles cuBLAS/CUTLASS-style heuristics choose from: 64, 128, 256 per side, at most
// 128 x 256 outputs per tile.
std::vector<GemmTileShape> default_gemm_tile_shapes();

// One device's parameters of the model. The ceilings are per data type; the tile and fixed-cost
// parameters are shared by all data types (fitted on BF16: in element units they do not change
// with the type when the MMA rate scales as 1 / element bytes).
struct GemmDeviceParams {
  std::string device;                   // "h100"
  std::string source;                   // which table rows set which parameter
  int sm_count = 0;                     // streaming multiprocessors
  double ceiling_bf16_flops_per_s = 0;  // best measured rate (large, well-shaped); 0: no BF16
  double ceiling_fp8_flops_per_s = 0;   // 0: no FP8
  double ceiling_tf32_flops_per_s = 0;  // 0: no TF32
  BytesPerSecond hbm_bandwidth;         // achieved streaming bandwidth (memory-bound side)
  std::vector<GemmTileShape> tile_shapes = default_gemm_tile_shapes();
  double tile_rate_over_ceiling = 1;  // the tile loop's rate at infinite k, over the ceiling
  double tile_k_overhead = 0;         // per-tile prologue/epilogue, in k elements
  double tile_balance_intensity = 0;  // FLOP per operand element below which a tile is load-bound
  Time kernel_fixed_cost;   // per kernel: launch, setup, drain (the smallest kernels' floor)
  bool calibrated = false;  // false: no public kernel data for this device (generic values)

  // The ceiling of `d`; 0 where the device has none.
  double ceiling_flops_per_s(GemmDtype d) const;
  void set_ceiling_flops_per_s(GemmDtype d, double flops_per_s);
};

// A measured table of GEMM times for one device, read from CSV (gemm_table.hpp).
class GemmTable;

// A device's GEMM time model, with an optional measured table. Cheap to copy: the table is shared.
class GemmModel {
 public:
  explicit GemmModel(GemmDeviceParams params);
  // Adds a measured table (nullptr removes it): shapes inside its range take the table's time
  // (GemmTable::lookup); others the model.
  void set_table(std::shared_ptr<const GemmTable> table);
  const std::shared_ptr<const GemmTable>& table() const { return table_; }

  // REQUIRES: m, n, k, batch >= 1. Throws InputError otherwise, or when the device has no ceiling
  // for `dtype` (for example FP8 on A100).
  GemmEstimate estimate(const GemmShape& shape, GemmDtype dtype) const;
  // The model alone (never the table). Same contract.
  GemmEstimate model_estimate(const GemmShape& shape, GemmDtype dtype) const;
  const GemmDeviceParams& params() const { return params_; }

 private:
  GemmDeviceParams params_;
  std::shared_ptr<const GemmTable> table_;
};

// The preset device names, in order: a100, h100, h200, h800, b200, ascend-910c.
std::vector<std::string> gemm_model_preset_names();
// The preset of a device name, with its table where one ships (h100 and h200: XLA's sm_90 table;
// b200: XLA's sm_100_B200 table; the text is compiled into the library). nullopt for an unknown
// name. Parses the shipped table on each call (a few milliseconds): keep the model and copy it.
std::optional<GemmModel> gemm_model_preset(std::string_view device);
// The preset's parameters alone (no table parsed); nullopt for an unknown name.
std::optional<GemmDeviceParams> gemm_params_preset(std::string_view device);

}  // namespace stepsim::workloads::kernels
