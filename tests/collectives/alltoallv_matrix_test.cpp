// AllToAllv size matrices: the Zipf skew, the CSV reader and the scaling used by
// `stepsim collective --op alltoallv`.
#include "sim/collectives/plan/alltoallv_matrix.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "sim/common/input_error.hpp"

namespace stepsim::collectives {
namespace {

std::int64_t row_sum(const AllToAllvMatrix& m, std::uint32_t src) {
  std::int64_t sum = 0;
  for (std::uint32_t d = 0; d < m.ranks; ++d)
    sum += m.at(src, d).count();
  return sum;
}

TEST(AllToAllvMatrix, SkewZeroIsTheUniformAllToAll) {
  const AllToAllvMatrix m = skewed_alltoallv_matrix(4, Bytes(4096), 0.0);
  ASSERT_EQ(m.sizes.size(), 16u);
  for (Bytes b : m.sizes)
    EXPECT_EQ(b.count(), 1024);  // 4096 / 4
  EXPECT_EQ(m.largest_row_sum().count(), 4096);
}

TEST(AllToAllvMatrix, SkewOneFollowsZipf) {
  // s = 1 on 4 ranks: weights 1, 1/2, 1/3, 1/4, sum 25/12; shares 12/25, 6/25, 4/25, 3/25 of
  // 2500 bytes = 1200, 600, 400, 300 exactly.
  const AllToAllvMatrix m = skewed_alltoallv_matrix(4, Bytes(2500), 1.0);
  for (std::uint32_t s = 0; s < 4; ++s) {
    EXPECT_EQ(m.at(s, 0).count(), 1200);
    EXPECT_EQ(m.at(s, 1).count(), 600);
    EXPECT_EQ(m.at(s, 2).count(), 400);
    EXPECT_EQ(m.at(s, 3).count(), 300);
  }
}

TEST(AllToAllvMatrix, RoundingKeepsEveryRowSumExact) {
  // 1000 bytes over 3 ranks uniformly: 333.33 each; the leftover byte goes to the first cell
  // (equal fractions, lowest index first), so rows are 334, 333, 333.
  const AllToAllvMatrix m = skewed_alltoallv_matrix(3, Bytes(1000), 0.0);
  EXPECT_EQ(m.at(1, 0).count(), 334);
  EXPECT_EQ(m.at(1, 1).count(), 333);
  for (std::uint32_t s = 0; s < 3; ++s)
    EXPECT_EQ(row_sum(m, s), 1000);
  // A large prime total with an irrational skew still sums exactly.
  const AllToAllvMatrix big = skewed_alltoallv_matrix(37, Bytes(1'000'000'007), 1.37);
  for (std::uint32_t s = 0; s < 37; ++s)
    EXPECT_EQ(row_sum(big, s), 1'000'000'007);
}

TEST(AllToAllvMatrix, NegativeOrNonFiniteSkewIsAnInputError) {
  EXPECT_THROW(skewed_alltoallv_matrix(4, Bytes(1), -0.5), InputError);
  EXPECT_THROW(skewed_alltoallv_matrix(4, Bytes(1), std::nan("")), InputError);
}

TEST(AllToAllvMatrix, CsvReadsSizesWithUnitsAndPlainBytes) {
  const AllToAllvMatrix m =
      parse_alltoallv_matrix_csv("# sender 0 first\n0, 1MiB\n\n2048,0\n", "m.csv", 2);
  EXPECT_EQ(m.at(0, 1).count(), 1 << 20);
  EXPECT_EQ(m.at(1, 0).count(), 2048);
  EXPECT_EQ(m.largest_row_sum().count(), 1 << 20);
}

void expect_csv_error(const std::string& text, std::uint32_t ranks, const std::string& message) {
  try {
    parse_alltoallv_matrix_csv(text, "m.csv", ranks);
    ADD_FAILURE() << "no error for:\n" << text;
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
}

TEST(AllToAllvMatrix, CsvErrorsNameTheFileLineAndValue) {
  expect_csv_error("1,2\n3\n", 2, "m.csv:2: row 1 has 1 columns");
  expect_csv_error("1,2\n3,4\n5,6\n", 2, "m.csv:3: more than 2 rows");
  expect_csv_error("1,2\n", 2, "m.csv: 1 rows; the group has 2 ranks");
  expect_csv_error("1,2\n3,4KB/s\n", 2, "m.csv:2: row 1, column 1: size '4KB/s'");
  expect_csv_error("1,2\n3,-4MiB\n", 2, "size '-4MiB'");
  expect_csv_error("0,0\n0,0\n", 2, "every size is zero");
}

TEST(AllToAllvMatrix, ScalingKeepsProportionsAndSetsTheLargestRow) {
  // Rows sum to 300 and 150; scaled to a largest row of 3000 bytes: x10, exactly.
  const AllToAllvMatrix m = parse_alltoallv_matrix_csv("0,100,200\n50,0,100\n0,0,0\n", "m", 3);
  const AllToAllvMatrix s = scale_alltoallv_matrix(m, Bytes(3000));
  EXPECT_EQ(s.at(0, 1).count(), 1000);
  EXPECT_EQ(s.at(0, 2).count(), 2000);
  EXPECT_EQ(s.at(1, 0).count(), 500);
  EXPECT_EQ(s.at(1, 2).count(), 1000);
  EXPECT_EQ(row_sum(s, 2), 0);
  EXPECT_EQ(s.largest_row_sum().count(), 3000);
}

}  // namespace
}  // namespace stepsim::collectives
