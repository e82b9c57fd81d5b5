#include "sim/engine/flat_index.hpp"

#include <gtest/gtest.h>
#include <cstdint>
#include <map>
#include <random>

namespace stepsim::engine {
namespace {

TEST(FlatIndex, FindsWhatWasInsertedAndNothingElse) {
  FlatIndex index;
  EXPECT_EQ(index.find(7), nullptr);
  index.insert(7, 70);
  index.insert(0, 1);
  ASSERT_NE(index.find(7), nullptr);
  EXPECT_EQ(*index.find(7), 70u);
  EXPECT_EQ(*index.find(0), 1u);
  EXPECT_EQ(index.find(8), nullptr);
  *index.find(7) = 71;
  EXPECT_EQ(*index.find(7), 71u);
  index.erase(7);
  EXPECT_EQ(index.find(7), nullptr);
  EXPECT_EQ(index.size(), 1u);
}

// Against std::map over 200,000 random operations on few keys (long probe runs, many deletions
// in the middle of runs): every lookup agrees, so backward-shift deletion keeps keys reachable.
TEST(FlatIndex, AgreesWithStdMapUnderRandomInsertsAndErases) {
  FlatIndex index;
  std::map<std::uint64_t, std::uint32_t> reference;
  std::mt19937_64 rng(42);
  for (int step = 0; step < 200000; ++step) {
    // Keys that collide in the low bits and in the high bits.
    const std::uint64_t key = (rng() % 512) * ((step % 2) != 0 ? 1024 : 1);
    const auto it = reference.find(key);
    std::uint32_t* const found = index.find(key);
    ASSERT_EQ(found != nullptr, it != reference.end()) << "step " << step;
    if (it != reference.end()) {
      ASSERT_EQ(*found, it->second);
      if (rng() % 2 == 0) {
        index.erase(key);
        reference.erase(it);
      }
    } else {
      const auto value = static_cast<std::uint32_t>(rng());
      index.insert(key, value);
      reference.emplace(key, value);
    }
    ASSERT_EQ(index.size(), reference.size());
  }
}

}  // namespace
}  // namespace stepsim::engine
