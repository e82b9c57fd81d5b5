// Rank placement and communicator groups, Megatron-LM's default order tp-cp-ep-dp-pp.
#include <gtest/gtest.h>

#include <vector>

#include "workloads/rank_map.hpp"

namespace stepsim::workloads {
namespace {

std::vector<int> members(const RankMap& m, int rank, Communicator k) {
  const auto s = m.members(m.group(rank, k));
  return {s.begin(), s.end()};
}

TEST(RankMap, DefaultOrderPutsTensorParallelInnermost) {
  // tp 2, cp 2, dp 2, pp 2 = 16 ranks: tp varies fastest, then cp, dp, pp.
  ParallelLayout p;
  p.tp = 2;
  p.cp = 2;
  p.dp = 2;
  p.pp = 2;
  const RankMap m(p);
  EXPECT_EQ(m.world_size(), 16);
  EXPECT_EQ(members(m, 5, Communicator::kTensor), (std::vector<int>{4, 5}));
  EXPECT_EQ(members(m, 5, Communicator::kContext), (std::vector<int>{5, 7}));
  EXPECT_EQ(members(m, 5, Communicator::kData), (std::vector<int>{1, 3, 5, 7}));  // dp x cp
  EXPECT_EQ(members(m, 5, Communicator::kPipeline), (std::vector<int>{5, 13}));
  EXPECT_EQ(m.stage(13), 1);
  EXPECT_EQ(m.index_in_group(13, Communicator::kPipeline), 1);
  // 8 tensor + 8 context + 16/2... groups: each kind partitions the 16 ranks.
  std::size_t total_members = 0;
  for (std::size_t g = 0; g < m.group_count(); ++g) {
    total_members += m.members(GroupId{static_cast<std::uint32_t>(g)}).size();
  }
  EXPECT_EQ(total_members, 16u * static_cast<std::size_t>(Communicator::kCount));
}

TEST(RankMap, ExpertGroupsAreCarvedOutOfOneStage) {
  // tp 2, dp 4, pp 2, ep 4: experts are not tensor-parallel, so edp = 2 x 4 / 4 = 2 and the
  // expert group of rank 0 is the 4 consecutive ranks 0..3 (Megatron's expert RankGenerator).
  ParallelLayout p;
  p.tp = 2;
  p.dp = 4;
  p.pp = 2;
  p.ep = 4;
  const RankMap m(p);
  EXPECT_EQ(members(m, 0, Communicator::kExpert), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(members(m, 9, Communicator::kExpertData), (std::vector<int>{9, 13}));
  EXPECT_EQ(m.coordinate(6, OrderDim::kEp), 2);
}

TEST(RankMap, OrderPutsDataParallelInnermost) {
  ParallelLayout p;
  p.tp = 2;
  p.dp = 2;
  p.order = {OrderDim::kDp, OrderDim::kTp, OrderDim::kCp, OrderDim::kEp, OrderDim::kPp};
  const RankMap m(p);
  EXPECT_EQ(members(m, 0, Communicator::kData), (std::vector<int>{0, 1}));
  EXPECT_EQ(members(m, 0, Communicator::kTensor), (std::vector<int>{0, 2}));
}

}  // namespace
}  // namespace stepsim::workloads
