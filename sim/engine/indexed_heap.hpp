// A binary min-heap of entries that can be found again: each entry's position in the heap is
// reported to a `Position` hook whenever it changes, so that the owner can update, lower, raise or
// remove an entry in O(log n) given its position (an "indexed" heap).
//
// Parameters:
//  - Entry: a small copyable value (keep the key in it, so that sifting reads nothing else);
//  - Before: a stateless strict total order on entries, `bool operator()(const Entry& a, const
//    Entry& b)`, true when a comes first. Include the tie-break (an index) in it: the heap then
//    yields the same entry first however it was built, so results never depend on its history;
//  - Position: a hook `void operator()(const Entry& e, std::uint32_t pos)` called with an entry's
//    new position every time it moves (NoPosition when nobody needs positions: it compiles away).
//    Removal tells the hook nothing; the owner forgets the position itself.
//
// Hooks for special uses: entry(pos) gives write access to an entry, after which sift_up(pos) (the
// entry now comes earlier) or sift_down(pos) (later) restores the order; a lazy-key user leaves an
// entry's key stale (a lower bound) and fixes it only when it reaches the top. push_unordered(),
// remove_unordered() and key changes through entry(), then make_heap(), reorder in linear time.
// pop_bottom_up() is the pop for heaps whose last entry belongs near the bottom (an event queue):
// see there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace stepsim::engine {

// A Position hook that stores nothing.
struct NoPosition {
  template <class Entry>
  void operator()(const Entry& /*entry*/, std::uint32_t /*pos*/) const {}
};

template <class Entry, class Before, class Position = NoPosition>
class IndexedHeap {
 public:
  explicit IndexedHeap(Position position = Position()) : position_(position) {}

  bool empty() const { return heap_.empty(); }
  std::size_t size() const { return heap_.size(); }
  const Entry& top() const { return heap_[0]; }
  const Entry& operator[](std::uint32_t pos) const { return heap_[pos]; }
  // Write access for a change of key; follow it with sift_up(pos) or sift_down(pos).
  Entry& entry(std::uint32_t pos) { return heap_[pos]; }
  void clear() { heap_.clear(); }

  // Adds an entry.
  void push(const Entry& e) {
    heap_.push_back(e);
    place_up(heap_.size() - 1, e);
  }
  // Adds an entry at the end without ordering it; make_heap() must follow before any other call.
  void push_unordered(const Entry& e) {
    position_(e, static_cast<std::uint32_t>(heap_.size()));
    heap_.push_back(e);
  }
  // Orders the whole heap (linear time).
  void make_heap() {
    for (std::size_t pos = heap_.size() / 2; pos-- > 0;)
      sift_down(static_cast<std::uint32_t>(pos));
  }
  // Replaces the entry at `pos` by `e` (which may come earlier or later).
  void update(std::uint32_t pos, const Entry& e) {
    heap_[pos] = e;
    restore(pos);
  }
  // Removes the entry at `pos`.
  void remove(std::uint32_t pos) {
    const Entry last = heap_.back();
    heap_.pop_back();
    if (pos < heap_.size()) {
      heap_[pos] = last;
      restore(pos);
    }
  }
  // Removes the entry at `pos` without ordering the rest (its last entry takes the place);
  // make_heap() must follow before any ordered call, as after push_unordered().
  void remove_unordered(std::uint32_t pos) {
    const Entry last = heap_.back();
    heap_.pop_back();
    if (pos < heap_.size()) {
      heap_[pos] = last;
      position_(last, pos);
    }
  }
  void pop() { remove(0); }
  // Removes the top: the hole at the root goes down to a leaf along the smaller children (one
  // comparison per level, chosen without a branch), then the last entry rises from there. When the
  // last entry belongs near the bottom (as in an event queue, where new entries are later than
  // most), this beats sifting it down from the root, whose second comparison per level is a coin
  // toss for the branch predictor. Same order as pop().
  void pop_bottom_up() {
    const Entry last = heap_.back();
    heap_.pop_back();
    const std::size_t n = heap_.size();
    if (n == 0) return;
    std::size_t i = 0;
    for (std::size_t child = 1; child < n; child = 2 * i + 1) {
      if (child + 1 < n) child += static_cast<std::size_t>(before_(heap_[child + 1], heap_[child]));
      heap_[i] = heap_[child];
      position_(heap_[i], static_cast<std::uint32_t>(i));
      i = child;
    }
    place_up(i, last);
  }

  // The entry at `pos` may now come before its parent: moves it up.
  void sift_up(std::uint32_t pos) { place_up(pos, heap_[pos]); }
  // The entry at `pos` may now come after a child: moves it down.
  void sift_down(std::uint32_t pos) {
    const Entry e = heap_[pos];
    const auto n = static_cast<std::uint32_t>(heap_.size());
    for (;;) {
      std::uint32_t child = 2 * pos + 1;
      if (child >= n) break;
      if (child + 1 < n && before_(heap_[child + 1], heap_[child])) ++child;
      if (!before_(heap_[child], e)) break;
      heap_[pos] = heap_[child];
      position_(heap_[pos], pos);
      pos = child;
    }
    heap_[pos] = e;
    position_(e, pos);
  }

 private:
  // Puts `e` (a copy: the slot may be overwritten) at `pos` or above, moving down the entries
  // that it comes before.
  void place_up(std::size_t pos, const Entry e) {
    while (pos > 0) {
      const std::size_t parent = (pos - 1) / 2;
      if (!before_(e, heap_[parent])) break;
      heap_[pos] = heap_[parent];
      position_(heap_[pos], static_cast<std::uint32_t>(pos));
      pos = parent;
    }
    heap_[pos] = e;
    position_(e, static_cast<std::uint32_t>(pos));
  }
  // Moves the entry at `pos` to its place, up or down.
  void restore(std::uint32_t pos) {
    if (pos > 0 && before_(heap_[pos], heap_[(pos - 1) / 2])) {
      sift_up(pos);
    } else {
      sift_down(pos);
    }
  }

  std::vector<Entry> heap_;
  [[no_unique_address]] Before before_;
  [[no_unique_address]] Position position_;
};

}  // namespace stepsim::engine
