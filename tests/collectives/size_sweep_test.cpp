#include <gtest/gtest.h>

#include "sim/collectives/plan/size_sweep.hpp"
#include "sim/common/input_error.hpp"

namespace stepsim::collectives {
namespace {

TEST(SizeSweep, DoublesFromFirstToLastLikeNcclTestsMinusF2) {
  // nccl-tests -b 8 -e 128 -f 2: 8, 16, 32, 64, 128.
  const auto sizes = parse_size_sweep("8B:128B");
  ASSERT_EQ(sizes.size(), 5u);
  EXPECT_EQ(sizes.front(), Bytes(8));
  EXPECT_EQ(sizes.back(), Bytes(128));
  EXPECT_EQ(parse_size_sweep("8B:16GiB").size(), 32u);  // 2^3 .. 2^34
  EXPECT_EQ(parse_size_sweep("1GiB"), std::vector<Bytes>{Bytes(std::int64_t{1} << 30)});
}

TEST(SizeSweep, RejectsSizesWithoutUnitAndReversedRanges) {
  EXPECT_THROW(parse_size_sweep("8:1024"), InputError);
  EXPECT_THROW(parse_size_sweep("1GiB:8B"), InputError);
  EXPECT_THROW(parse_size_sweep("0B:8B"), InputError);
}

}  // namespace
}  // namespace stepsim::collectives
