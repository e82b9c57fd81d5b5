// Operation names and nccl-tests' bus bandwidth factors (NVIDIA/nccl-tests doc/PERFORMANCE.md).
#include <gtest/gtest.h>

#include "sim/collectives/plan/operation.hpp"
#include "sim/common/input_error.hpp"

namespace stepsim::collectives {
namespace {

TEST(Operation, ParsesNamesInEverySpelling) {
  EXPECT_EQ(parse_collective_kind("allreduce"), CollectiveKind::kAllReduce);
  EXPECT_EQ(parse_collective_kind("all_reduce"), CollectiveKind::kAllReduce);
  EXPECT_EQ(parse_collective_kind("AllGather"), CollectiveKind::kAllGather);
  EXPECT_EQ(parse_collective_kind("reduce-scatter"), CollectiveKind::kReduceScatter);
  EXPECT_EQ(parse_collective_kind("alltoallv"), CollectiveKind::kAllToAllv);
  for (const auto& name : collective_kind_names())
    EXPECT_EQ(to_string(parse_collective_kind(name)), name);
}

TEST(Operation, UnknownNameSuggestsTheClosest) {
  try {
    parse_collective_kind("allreduc");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean 'allreduce'"), std::string::npos)
        << e.what();
  }
}

TEST(Operation, BusBandwidthFactorsAreNcclTests) {
  // PERFORMANCE.md: AllReduce 2(n-1)/n; AllGather, ReduceScatter, AllToAll (n-1)/n; Broadcast 1.
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveKind::kAllReduce, 8), 14.0 / 8.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveKind::kAllGather, 8), 7.0 / 8.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveKind::kReduceScatter, 16), 15.0 / 16.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveKind::kAllToAll, 4), 3.0 / 4.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveKind::kBroadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveKind::kSendRecv, 2), 1.0);
}

TEST(Operation, CountColumnIsPerRankForGatherAndScatter) {
  // nccl-tests prints count = S / sizeof(type), divided by n for AllGather and ReduceScatter.
  EXPECT_EQ(nccl_tests_count(CollectiveKind::kAllReduce, Bytes(1024), 8, 4), 256);
  EXPECT_EQ(nccl_tests_count(CollectiveKind::kAllGather, Bytes(1024), 8, 4), 32);
}

}  // namespace
}  // namespace stepsim::collectives
