// A measured table of GEMM times on one device, and its lookup inside the table's range.
//
// CSV: a header line naming the columns, then one row per measurement; '#' lines and empty lines
// are skipped, fields are split at commas (a field in double quotes may hold commas) and trimmed.
// Columns (others are ignored):
//   m, n, k            positive integers (required)
//   b or batch         positive integer (optional; 1 when absent)
//   dtype              bf16 | fp8 | tf32 (aliases: f8e4m3fn, f8e4m3, e4m3 for fp8; f32 for tf32)
//     or lhs_dtype and rhs_dtype (XLA's table): the row's type when both name the same type; rows
//     whose two inputs differ (mixed FP8 formats) are not a GemmDtype and are skipped
//   time               a time with its unit ("12.5us", "4992ns"; units.hpp's parse_time)
//     or time_ns / time_us / time_s  a plain positive number in that unit
// A bad row throws InputError naming the source, the line, the column and the value; so does a
// second row of one (shape, dtype).
//
// Lookup: for one (batch, dtype) the table's distinct m, n and k values form the grid axes. A
// shape whose m, n, k all lie within the axes' range (and whose batch the table has) is answered
// by trilinear interpolation of log(time) in (log2 m, log2 n, log2 k) between the 8 corners of
// its cell; exactly at a grid point the stored time itself. Where a corner is missing (an
// incomplete grid) the table does not answer.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/common/units.hpp"
#include "workloads/kernels/gemm_model.hpp"

namespace stepsim::workloads::kernels {

struct GemmTableRow {
  GemmShape shape;
  GemmDtype dtype = GemmDtype::kBf16;
  Time time;
  int line = 0;  // 1-based line in the source text
  double flops_per_s() const { return shape.flops() / time.seconds(); }
};

// The rows of a CSV as described above, repeats allowed (a list of measurements, not a table).
std::vector<GemmTableRow> parse_gemm_csv_rows(std::string_view text, std::string_view source_name);

class GemmTable {
 public:
  // Throws InputError as described at the top of this file. `source_name` names the text in
  // messages ("validation/data/kernels/xla_matmul_sm_90.csv").
  static GemmTable from_csv(std::string_view text, std::string_view source_name);
  // A table of the given rows; throws InputError on a repeated (shape, dtype).
  GemmTable(std::vector<GemmTableRow> rows, std::string source_name);

  // The table's time for `shape`, or nullopt where the shape is outside its range.
  std::optional<Time> lookup(const GemmShape& shape, GemmDtype dtype) const;

  // This table less the rows of `dtype` faster than `flops_per_s` (measurement artefacts above a
  // device's peak); their cells then fall back to the model.
  GemmTable without_rows_faster_than(GemmDtype dtype, double flops_per_s) const;

  // This table less the rows of `dtype` more than `factor` times faster than the row of
  // `reference` at the same shape (rows with no such reference row stay).
  GemmTable without_rows_faster_than_reference(GemmDtype dtype, GemmDtype reference,
                                               double factor) const;

  const std::vector<GemmTableRow>& rows() const { return rows_; }
  const std::string& source_name() const { return source_name_; }

 private:
  struct Grid {
    std::vector<std::int64_t> m, n, k;                    // sorted, distinct
    std::map<std::array<std::int64_t, 3>, Time> time_at;  // (m, n, k) -> time
  };
  std::vector<GemmTableRow> rows_;
  std::string source_name_;
  std::map<std::pair<GemmDtype, std::int64_t>, Grid> grids_;  // (dtype, batch) -> grid
};

// XLA's sm_90 (H100) table as the h100 and h200 presets use it: the FP8 rows faster than H100
// SXM's 1979 TFLOP/s dense FP8 peak, or more than twice the BF16 rate at the same shape (the dense
// FP8:BF16 ratio of the tensor cores), are measurement artefacts (xla_matmul.yaml's caveat: a
// median that lands on a short auxiliary kernel) and are left out.
GemmTable without_unreliable_sm90_fp8_rows(const GemmTable& sm_90);

}  // namespace stepsim::workloads::kernels
