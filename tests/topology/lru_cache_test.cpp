// The router's distance-table cache: least recently used entries leave first, within a budget of
// bytes, and the entry just inserted always stays.
#include "topology/lru_cache.hpp"

#include <gtest/gtest.h>
#include <cstdint>
#include <memory>
#include <string>

namespace stepsim::topology {
namespace {

TEST(LruCache, FindsWhatWasInsertedAndNothingElse) {
  LruCache<std::uint64_t, std::string> cache(100);
  EXPECT_EQ(cache.find(1), nullptr);
  cache.insert(1, "one", 10);
  cache.insert(2, "two", 10);
  ASSERT_NE(cache.find(1), nullptr);
  EXPECT_EQ(*cache.find(1), "one");
  EXPECT_EQ(*cache.find(2), "two");
  EXPECT_EQ(cache.find(3), nullptr);
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.bytes(), 20u);
}

// Budget 30 bytes, entries of 10: the fourth insert evicts the least recently used, which a find
// of entry 1 turned into entry 2.
TEST(LruCache, EvictsTheLeastRecentlyUsedBeyondTheBudget) {
  LruCache<int, int> cache(30);
  cache.insert(1, 10, 10);
  cache.insert(2, 20, 10);
  cache.insert(3, 30, 10);
  ASSERT_NE(cache.find(1), nullptr);
  cache.insert(4, 40, 10);
  EXPECT_FALSE(cache.contains(2));
  EXPECT_TRUE(cache.contains(1));
  EXPECT_TRUE(cache.contains(3));
  EXPECT_TRUE(cache.contains(4));
  EXPECT_EQ(cache.bytes(), 30u);
  // A 25-byte entry leaves room for nothing else: 3 and 1 go (least recent first), 4 stays.
  cache.insert(5, 50, 15);
  EXPECT_FALSE(cache.contains(3));
  EXPECT_FALSE(cache.contains(1));
  EXPECT_TRUE(cache.contains(4));
  EXPECT_EQ(cache.bytes(), 25u);
}

TEST(LruCache, KeepsTheEntryJustInsertedEvenAboveTheBudget) {
  LruCache<int, std::unique_ptr<int>> cache(8);
  cache.insert(1, std::make_unique<int>(1), 4);
  int& big = *cache.insert(2, std::make_unique<int>(2), 100);
  EXPECT_EQ(big, 2);
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_FALSE(cache.contains(1));
  EXPECT_EQ(cache.bytes(), 100u);
  // The next insert evicts it.
  cache.insert(3, std::make_unique<int>(3), 4);
  EXPECT_FALSE(cache.contains(2));
  EXPECT_EQ(cache.bytes(), 4u);
}

// Values do not move while cached: a pointer taken at insert stays valid across finds and inserts
// that evict others.
TEST(LruCache, ValuesStayInPlace) {
  LruCache<int, int> cache(3);
  int* first = &cache.insert(0, 0, 1);
  for (int k = 1; k < 500; ++k) {
    cache.insert(k, k, 1);
    ASSERT_EQ(cache.find(0), first);
  }
  EXPECT_EQ(cache.size(), 3u);
}

}  // namespace
}  // namespace stepsim::topology
