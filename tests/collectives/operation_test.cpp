// Operation names and nccl-tests' bus bandwidth factors (NVIDIA/nccl-tests doc/PERFORMANCE.md).
#include <gtest/gtest.h>

#include "sim/collectives/operation.hpp"
#include "sim/common/input_error.hpp"

namespace stepsim::collectives {
namespace {

TEST(Operation, ParsesNamesInEverySpelling) {
  EXPECT_EQ(parse_op_kind("allreduce"), OpKind::kAllReduce);
  EXPECT_EQ(parse_op_kind("all_reduce"), OpKind::kAllReduce);
  EXPECT_EQ(parse_op_kind("AllGather"), OpKind::kAllGather);
  EXPECT_EQ(parse_op_kind("reduce-scatter"), OpKind::kReduceScatter);
  EXPECT_EQ(parse_op_kind("alltoallv"), OpKind::kAllToAllv);
  for (const auto& name : op_kind_names())
    EXPECT_EQ(to_string(parse_op_kind(name)), name);
}

TEST(Operation, UnknownNameSuggestsTheClosest) {
  try {
    parse_op_kind("allreduc");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean 'allreduce'"), std::string::npos)
        << e.what();
  }
}

TEST(Operation, BusBandwidthFactorsAreNcclTests) {
  // PERFORMANCE.md: AllReduce 2(n-1)/n; AllGather, ReduceScatter, AllToAll (n-1)/n; Broadcast 1.
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(OpKind::kAllReduce, 8), 14.0 / 8.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(OpKind::kAllGather, 8), 7.0 / 8.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(OpKind::kReduceScatter, 16), 15.0 / 16.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(OpKind::kAllToAll, 4), 3.0 / 4.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(OpKind::kBroadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(OpKind::kSendRecv, 2), 1.0);
}

TEST(Operation, CountColumnIsPerRankForGatherAndScatter) {
  // nccl-tests prints count = S / sizeof(type), divided by n for AllGather and ReduceScatter.
  EXPECT_EQ(nccl_tests_count(OpKind::kAllReduce, Bytes(1024), 8, 4), 256);
  EXPECT_EQ(nccl_tests_count(OpKind::kAllGather, Bytes(1024), 8, 4), 32);
}

}  // namespace
}  // namespace stepsim::collectives
