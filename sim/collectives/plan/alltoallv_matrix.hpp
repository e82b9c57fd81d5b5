// Per-pair size matrices for AllToAllv (row = sender, column = receiver, n x n, group order), as
// `stepsim collective --op alltoallv` takes them: from a CSV file, or generated with a Zipf skew
// (the expert-popularity law of workloads' `routing_skew`: receiver j gets a share of every
// sender's bytes proportional to (j+1)^-s; s = 0 is the uniform AllToAll).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "sim/common/units.hpp"

namespace stepsim::collectives {

// n x n sizes, matrix[src * n + dst]; the diagonal is what a rank keeps (moves no bytes).
struct AllToAllvMatrix {
  std::uint32_t ranks = 0;
  std::vector<Bytes> sizes;

  Bytes at(std::uint32_t src, std::uint32_t dst) const { return sizes[src * ranks + dst]; }
  // The largest row sum: the `size` of the operation (nccl-tests' algbw = size / time).
  Bytes largest_row_sum() const;
};

// Throws InputError unless `skew` is finite and >= 0.
void check_skew(double skew);

// Every row holds `row_bytes`, split over receivers by (j+1)^-skew (largest-remainder rounding, so
// each row sums to row_bytes exactly). skew must be finite and >= 0, else InputError.
AllToAllvMatrix skewed_alltoallv_matrix(std::uint32_t ranks, Bytes row_bytes, double skew);

// Reads an n x n CSV: n non-empty lines (blank lines and lines starting with '#' skipped) of n
// comma-separated sizes, each a size with unit ("4MiB") or a plain integer count of bytes. Throws
// InputError naming the file, line and value for a wrong shape, a bad size or an all-zero matrix.
AllToAllvMatrix read_alltoallv_matrix_csv(const std::filesystem::path& path, std::uint32_t ranks);
AllToAllvMatrix parse_alltoallv_matrix_csv(std::string_view text, const std::string& origin,
                                           std::uint32_t ranks);

// The matrix scaled so that its largest row sum is `largest_row` (cells rounded to whole bytes,
// largest remainder per row), keeping the proportions: a file gives the shape, a size sweep the
// scale.
AllToAllvMatrix scale_alltoallv_matrix(const AllToAllvMatrix& matrix, Bytes largest_row);

}  // namespace stepsim::collectives
