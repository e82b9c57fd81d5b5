#include "sim/engine/indexed_heap.hpp"

#include <gtest/gtest.h>
#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

namespace stepsim::engine {
namespace {

constexpr std::uint32_t kAbsent = 0xffffffffu;

// An entry keyed by `key`, ties broken by `id` (the ids are distinct, so the order is total).
struct Item {
  std::int64_t key;
  std::uint32_t id;
};
struct ItemBefore {
  bool operator()(const Item& a, const Item& b) const {
    return a.key < b.key || (a.key == b.key && a.id < b.id);
  }
};
// Positions kept per id, as the flow network keeps them per class.
struct ItemPosition {
  std::vector<std::uint32_t>* pos;
  void operator()(const Item& e, std::uint32_t p) const { (*pos)[e.id] = p; }
};
using Heap = IndexedHeap<Item, ItemBefore, ItemPosition>;

// The heap's entries in pop order, emptying it.
std::vector<std::uint32_t> drain(Heap& heap) {
  std::vector<std::uint32_t> order;
  while (!heap.empty()) {
    order.push_back(heap.top().id);
    heap.pop();
  }
  return order;
}

// Every recorded position points at its entry, and no child comes before its parent.
void expect_consistent(const Heap& heap, const std::vector<std::uint32_t>& pos) {
  for (std::uint32_t p = 0; p < heap.size(); ++p) {
    EXPECT_EQ(pos[heap[p].id], p);
    if (p > 0) {
      EXPECT_FALSE(ItemBefore()(heap[p], heap[(p - 1) / 2]));
    }
  }
}

TEST(IndexedHeap, PopsInKeyOrderWithTiesByIndex) {
  std::vector<std::uint32_t> pos(6, kAbsent);
  Heap heap(ItemPosition{&pos});
  // Keys 5, 1, 5, 1, 3, 1 for ids 0..5: the three 1s come out by id, then 3, then the 5s by id.
  const std::int64_t keys[] = {5, 1, 5, 1, 3, 1};
  for (std::uint32_t id = 0; id < 6; ++id)
    heap.push({keys[id], id});
  expect_consistent(heap, pos);
  EXPECT_EQ(drain(heap), (std::vector<std::uint32_t>{1, 3, 5, 4, 0, 2}));
}

TEST(IndexedHeap, BottomUpPopAndLinearBuildGiveTheSameOrder) {
  std::mt19937_64 rng(7);
  std::vector<std::uint32_t> pos_a(500, kAbsent), pos_b(500, kAbsent);
  Heap a(ItemPosition{&pos_a});
  Heap b(ItemPosition{&pos_b});
  for (std::uint32_t id = 0; id < 500; ++id) {
    const Item e{static_cast<std::int64_t>(rng() % 50), id};
    a.push(e);
    b.push_unordered(e);
  }
  b.make_heap();
  expect_consistent(a, pos_a);
  expect_consistent(b, pos_b);
  std::vector<std::uint32_t> order_b;
  while (!b.empty()) {
    order_b.push_back(b.top().id);
    b.pop_bottom_up();
    expect_consistent(b, pos_b);
  }
  EXPECT_EQ(drain(a), order_b);
}

// Against a brute force (a plain array searched for its minimum): updates, key changes through
// entry() and removals at every position of heaps of every size up to 40.
TEST(IndexedHeap, UpdateAndRemoveAtEveryPositionAgreeWithBruteForce) {
  std::mt19937_64 rng(11);
  for (std::uint32_t n = 1; n <= 40; ++n) {
    for (std::uint32_t at = 0; at < n; ++at) {
      for (int op = 0; op < 4; ++op) {
        std::vector<std::uint32_t> pos(n, kAbsent);
        Heap heap(ItemPosition{&pos});
        std::vector<std::int64_t> key(n);
        for (std::uint32_t id = 0; id < n; ++id) {
          key[id] = static_cast<std::int64_t>(rng() % 16);
          heap.push({key[id], id});
        }
        const std::uint32_t id = heap[at].id;
        std::vector<bool> present(n, true);
        const auto new_key = static_cast<std::int64_t>(rng() % 16);
        if (op == 0) {
          heap.remove(at);
          present[id] = false;
        } else if (op == 1) {
          key[id] = new_key;
          heap.update(at, {new_key, id});
        } else {
          // A lazy key: lowered (op 2) or raised (op 3) in place, then sifted.
          key[id] = op == 2 ? std::min(key[id], new_key) : std::max(key[id], new_key);
          heap.entry(at).key = key[id];
          if (op == 2) {
            heap.sift_up(at);
          } else {
            heap.sift_down(at);
          }
        }
        expect_consistent(heap, pos);
        std::vector<std::uint32_t> expected;
        for (;;) {
          std::uint32_t best = kAbsent;
          for (std::uint32_t i = 0; i < n; ++i) {
            if (present[i] && (best == kAbsent || key[i] < key[best])) best = i;
          }
          if (best == kAbsent) break;
          expected.push_back(best);
          present[best] = false;
        }
        ASSERT_EQ(drain(heap), expected) << "n " << n << ", position " << at << ", op " << op;
      }
    }
  }
}

TEST(IndexedHeap, WorksWithoutPositions) {
  IndexedHeap<Item, ItemBefore> heap;
  for (std::uint32_t id = 0; id < 100; ++id)
    heap.push({static_cast<std::int64_t>((id * 37) % 100), id});
  std::int64_t last = -1;
  while (!heap.empty()) {
    EXPECT_GT(heap.top().key, last);
    last = heap.top().key;
    heap.pop_bottom_up();
  }
  EXPECT_EQ(last, 99);
}

}  // namespace
}  // namespace stepsim::engine
