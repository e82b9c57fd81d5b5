#include "sim/engine/drain_queue.hpp"

#include <gtest/gtest.h>
#include <cstdint>
#include <iterator>
#include <map>
#include <random>
#include <vector>

namespace stepsim::engine::detail {
namespace {

// The reference: each queued class's end; the classes due are those of the smallest end, in
// increasing index (the order of a heap of (end, class) entries).
struct Reference {
  std::map<std::uint32_t, std::int64_t> end;
  std::int64_t first_end() const {
    std::int64_t first = end.begin()->second;
    for (const auto& [cls, e] : end)
      first = std::min(first, e);
    return first;
  }
  std::vector<std::uint32_t> take_first() {
    const std::int64_t first = first_end();
    std::vector<std::uint32_t> due;
    for (auto it = end.begin(); it != end.end();) {
      if (it->second == first) {
        due.push_back(it->first);
        it = end.erase(it);
      } else {
        ++it;
      }
    }
    return due;
  }
};

void expect_same(const DrainQueue& q, const Reference& ref, std::uint32_t classes) {
  ASSERT_EQ(q.size(), ref.end.size());
  ASSERT_EQ(q.empty(), ref.end.empty());
  for (std::uint32_t c = 0; c < classes; ++c) {
    const auto it = ref.end.find(c);
    ASSERT_EQ(q.contains(c), it != ref.end.end()) << "class " << c;
    if (it != ref.end.end()) {
      ASSERT_EQ(q.end_of(c), it->second) << "class " << c;
    }
  }
  if (!ref.end.empty()) {
    ASSERT_EQ(q.first_end(), ref.first_end());
  }
}

// Random sets (many to ends other classes have, as twins get), erases, takes and bulk rounds,
// checked against the reference after each step: the same classes due, in the same order.
TEST(DrainQueue, TakesTheClassesOfTheSmallestEndInIndexOrderAsAHeapOfClassesWould) {
  for (std::uint32_t seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    const std::uint32_t classes = 5 + seed * 7;
    std::vector<ClassDrain> drain(classes);
    DrainQueue q(drain);
    Reference ref;
    std::int64_t now = 0;
    std::vector<std::uint32_t> due;
    auto pick_end = [&] {
      // Few distinct ends (so that classes share them), now and then a new one.
      const std::uint32_t kind = rng() % 4;
      return kind == 0 ? now + 1 + static_cast<std::int64_t>(rng() % 1000000)
                       : now + 1 + static_cast<std::int64_t>(rng() % 6);
    };
    for (int step = 0; step < 4000; ++step) {
      const std::uint32_t op = rng() % 10;
      if (op < 6) {
        const std::uint32_t c = rng() % classes;
        const std::int64_t e = pick_end();
        q.set(c, e);
        ref.end[c] = e;
      } else if (op < 7) {
        const std::uint32_t c = rng() % classes;
        q.erase(c);
        ref.end.erase(c);
      } else if (op < 8) {  // a round of moves, as a solve that moves a few twin sets
        q.begin_moves();
        std::vector<char> moved(classes, 0);
        const std::uint32_t groups = 1 + rng() % 3;
        for (std::uint32_t g = 0; g < groups; ++g) {
          // The classes of one end now (a bucket, as twins are), most or all to one new end.
          const std::int64_t from =
              ref.end.empty() ? -1 : std::next(ref.end.begin(), rng() % ref.end.size())->second;
          const std::int64_t to = pick_end();
          for (const auto& [c, e] : std::map<std::uint32_t, std::int64_t>(ref.end)) {
            if (e != from || moved[c] != 0 || rng() % 5 == 0) continue;
            moved[c] = 1;
            const std::int64_t end = rng() % 7 == 0 ? pick_end() : to;
            q.set(c, end);
            ref.end[c] = end;
          }
        }
        for (std::uint32_t k = rng() % 4; k > 0; --k) {  // and a few others
          const std::uint32_t c = rng() % classes;
          if (moved[c] != 0) continue;
          moved[c] = 1;
          const std::int64_t e = pick_end();
          q.set(c, e);
          ref.end[c] = e;
        }
        q.end_moves();
      } else if (op < 9) {
        if (ref.end.empty()) continue;
        const std::int64_t first = q.take_first(due);
        EXPECT_EQ(first, ref.first_end());
        ASSERT_EQ(due, ref.take_first()) << "seed " << seed << " step " << step;
        now = first;
      } else {  // a bulk round, as a solve that moves most of the queue
        q.begin_bulk();
        const std::uint32_t moves = 1 + rng() % (2 * classes);
        for (std::uint32_t k = 0; k < moves; ++k) {
          const std::uint32_t c = rng() % classes;
          if (rng() % 8 == 0) {
            q.erase(c);
            ref.end.erase(c);
          } else {
            const std::int64_t e = pick_end();
            q.set(c, e);
            ref.end[c] = e;
          }
        }
        q.end_bulk();
      }
      expect_same(q, ref, classes);
      if (HasFatalFailure()) return;
    }
  }
}

// Twins: classes set to one end come out together, in index order, however they joined (the
// first alone, then with others, one leaving again, one moving in from another end).
TEST(DrainQueue, ClassesSharingAnEndComeOutTogetherInIndexOrder) {
  std::vector<ClassDrain> drain(10);
  DrainQueue q(drain);
  q.set(7, 100);
  q.set(3, 100);
  q.set(9, 100);
  q.set(1, 50);
  q.set(5, 200);
  q.set(3, 300);  // leaves the end 100
  q.set(5, 100);  // joins it
  q.erase(9);
  EXPECT_EQ(q.size(), 4u);
  std::vector<std::uint32_t> due;
  EXPECT_EQ(q.take_first(due), 50);
  EXPECT_EQ(due, std::vector<std::uint32_t>({1}));
  EXPECT_EQ(q.take_first(due), 100);
  EXPECT_EQ(due, std::vector<std::uint32_t>({5, 7}));
  EXPECT_EQ(q.take_first(due), 300);
  EXPECT_EQ(due, std::vector<std::uint32_t>({3}));
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.size(), 0u);
  for (std::uint32_t c = 0; c < 10; ++c)
    EXPECT_FALSE(q.contains(c));
}

}  // namespace
}  // namespace stepsim::engine::detail
