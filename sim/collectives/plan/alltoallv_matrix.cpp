#include "sim/collectives/plan/alltoallv_matrix.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "sim/collectives/plan/csv.hpp"
#include "sim/common/input_error.hpp"

namespace stepsim::collectives {
namespace {

// Splits `total` bytes over cells in proportion to `weights` (>= 0, sum > 0): floor of each exact
// share, then the leftover bytes one each to the largest fractional parts (ties to the lower
// index), so the cells sum to `total` exactly and the result is deterministic.
std::vector<Bytes> apportion(std::int64_t total, const std::vector<double>& weights) {
  const double sum = std::accumulate(weights.begin(), weights.end(), 0.0);
  std::vector<Bytes> out(weights.size());
  std::vector<std::pair<double, std::size_t>> fractions;
  std::int64_t given = 0;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    const double exact = static_cast<double>(total) * (weights[i] / sum);
    const auto whole = static_cast<std::int64_t>(std::floor(exact));
    out[i] = Bytes(whole);
    given += whole;
    fractions.push_back({exact - static_cast<double>(whole), i});
  }
  std::stable_sort(fractions.begin(), fractions.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  // Floating-point shares of a huge total can leave the floors a byte off in either direction:
  // add to the largest fractional parts, take from the smallest non-empty ones.
  for (std::size_t k = 0; given < total; k = (k + 1) % fractions.size(), ++given)
    out[fractions[k].second] = out[fractions[k].second] + Bytes(1);
  for (std::size_t k = fractions.size(); given > total;) {
    k = (k == 0 ? fractions.size() : k) - 1;  // from the smallest fractional part, cycling
    Bytes& cell = out[fractions[k].second];
    if (cell.count() > 0) {
      cell = Bytes(cell.count() - 1);
      --given;
    }
  }
  return out;
}

}  // namespace

Bytes AllToAllvMatrix::largest_row_sum() const {
  std::int64_t best = 0;
  for (std::uint32_t s = 0; s < ranks; ++s) {
    std::int64_t row = 0;
    for (std::uint32_t d = 0; d < ranks; ++d)
      row += at(s, d).count();
    best = std::max(best, row);
  }
  return Bytes(best);
}

void check_skew(double skew) {
  if (!std::isfinite(skew) || skew < 0)
    throw InputError(fmt::format("skew {}: expected a finite number >= 0 (0 is uniform)", skew));
}

AllToAllvMatrix skewed_alltoallv_matrix(std::uint32_t ranks, Bytes row_bytes, double skew) {
  check_skew(skew);
  if (ranks == 0) throw std::invalid_argument("skewed_alltoallv_matrix: no ranks");
  std::vector<double> weights(ranks);
  for (std::uint32_t j = 0; j < ranks; ++j)
    weights[j] = std::pow(static_cast<double>(j) + 1.0, -skew);
  const std::vector<Bytes> row = apportion(row_bytes.count(), weights);
  AllToAllvMatrix m;
  m.ranks = ranks;
  m.sizes.reserve(std::size_t{ranks} * ranks);
  for (std::uint32_t s = 0; s < ranks; ++s)
    m.sizes.insert(m.sizes.end(), row.begin(), row.end());
  return m;
}

AllToAllvMatrix parse_alltoallv_matrix_csv(std::string_view text, const std::string& origin,
                                           std::uint32_t ranks) {
  AllToAllvMatrix m;
  m.ranks = ranks;
  std::uint32_t rows = 0;
  for (const csv::Line& line : csv::data_lines(text)) {
    auto fail = [&](const std::string& message) {
      throw InputError(fmt::format("{}:{}: {}", origin, line.number, message));
    };
    if (rows == ranks)
      fail(
          fmt::format("more than {} rows: the matrix must be {} x {} (one row per rank of the "
                      "group)",
                      ranks, ranks, ranks));
    if (line.fields.size() != ranks)
      fail(fmt::format("row {} has {} columns; the group has {} ranks, so each row needs {}", rows,
                       line.fields.size(), ranks, ranks));
    std::int64_t row_sum = 0;
    for (std::size_t c = 0; c < line.fields.size(); ++c) {
      try {
        m.sizes.push_back(csv::parse_size(line.fields[c]));
      } catch (const InputError& e) {
        fail(fmt::format("row {}, column {}: size '{}': {}", rows, c, line.fields[c], e.what()));
      }
      if (m.sizes.back().count() > std::numeric_limits<std::int64_t>::max() - row_sum)
        fail(fmt::format("row {}: the sizes add up to more than {} bytes", rows,
                         std::numeric_limits<std::int64_t>::max()));
      row_sum += m.sizes.back().count();
    }
    ++rows;
  }
  if (rows != ranks)
    throw InputError(
        fmt::format("{}: {} rows; the group has {} ranks, so the matrix must be {} x {}", origin,
                    rows, ranks, ranks, ranks));
  if (m.largest_row_sum().count() == 0)
    throw InputError(fmt::format("{}: every size is zero; nothing to send", origin));
  return m;
}

AllToAllvMatrix read_alltoallv_matrix_csv(const std::filesystem::path& path, std::uint32_t ranks) {
  return parse_alltoallv_matrix_csv(csv::read_file(path, "matrix file"), path.string(), ranks);
}

AllToAllvMatrix scale_alltoallv_matrix(const AllToAllvMatrix& matrix, Bytes largest_row) {
  const double factor = largest_row.as_double() / matrix.largest_row_sum().as_double();
  AllToAllvMatrix out;
  out.ranks = matrix.ranks;
  out.sizes.reserve(matrix.sizes.size());
  for (std::uint32_t s = 0; s < matrix.ranks; ++s) {
    std::vector<double> weights(matrix.ranks);
    double row_sum = 0;
    for (std::uint32_t d = 0; d < matrix.ranks; ++d) {
      weights[d] = matrix.at(s, d).as_double();
      row_sum += weights[d];
    }
    if (row_sum == 0) {
      out.sizes.insert(out.sizes.end(), matrix.ranks, Bytes(0));
      continue;
    }
    const auto row_total = static_cast<std::int64_t>(std::llround(row_sum * factor));
    const std::vector<Bytes> row = apportion(row_total, weights);
    out.sizes.insert(out.sizes.end(), row.begin(), row.end());
  }
  return out;
}

}  // namespace stepsim::collectives
