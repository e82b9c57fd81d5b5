// The plan container: dependencies in CSR form, the reverse graph, joins, byte accounting.
#include <gtest/gtest.h>

#include "sim/collectives/plan/plan.hpp"

namespace stepsim::collectives {
namespace {

TEST(Plan, StoresDependenciesAndTheirReverse) {
  PlanBuilder builder;
  const auto a = builder.add({Endpoint::member(0), Endpoint::member(1), Bytes(10), Time{}, 1});
  const auto b = builder.add({Endpoint::member(1), Endpoint::member(2), Bytes(20), Time{}, 1}, {a});
  const auto c = builder.join(2, std::vector<TransferId>{a, b});
  const Plan plan = std::move(builder).finish(Reduction::kNone);
  ASSERT_EQ(plan.size(), 3u);
  EXPECT_EQ(plan.dependencies(b).size(), 1u);
  EXPECT_EQ(plan.dependencies(c).size(), 2u);
  ASSERT_EQ(plan.dependents(a).size(), 2u);
  EXPECT_EQ(plan.dependents(a)[0], b);
  EXPECT_EQ(plan.dependents(a)[1], c);
  EXPECT_TRUE(plan.transfer(c).is_join());
  EXPECT_EQ(plan.total_bytes(), Bytes(30));  // the join moves nothing
  EXPECT_EQ(plan.bytes_sent(3)[1], Bytes(20));
  EXPECT_EQ(plan.bytes_received(3)[2], Bytes(20));
}

TEST(Plan, RejectsForwardDependencies) {
  PlanBuilder builder;
  EXPECT_THROW(
      builder.add({Endpoint::member(0), Endpoint::member(1), Bytes(1), Time{}, 1}, {TransferId(0)}),
      std::logic_error);
}

TEST(Plan, SwitchEndpointIsDistinctFromMembers) {
  EXPECT_TRUE(Endpoint::reduction_switch().is_switch());
  EXPECT_FALSE(Endpoint::member(0).is_switch());
  EXPECT_NE(Endpoint::reduction_switch(), Endpoint::member(0));
}

}  // namespace
}  // namespace stepsim::collectives
