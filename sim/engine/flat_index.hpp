// A map from 64-bit keys to 32-bit values for the engine's hot paths: open addressing with linear
// probing in one flat array (a power of two, at most half full) and backward-shift deletion (no
// tombstones), so that inserting and erasing allocate nothing once the table has grown. Lookup
// only: it cannot be iterated, so its layout never leaks into results.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace stepsim::engine {

class FlatIndex {
 public:
  // The value stored for `key`, or nullptr. The pointer stays valid until the next insert or erase.
  std::uint32_t* find(std::uint64_t key) {
    if (slots_.empty()) return nullptr;
    for (std::size_t i = home(key);; i = (i + 1) & mask_) {
      Slot& slot = slots_[i];
      if (!slot.used) return nullptr;
      if (slot.key == key) return &slot.value;
    }
  }
  // Inserts a key that is not present.
  void insert(std::uint64_t key, std::uint32_t value) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    std::size_t i = home(key);
    while (slots_[i].used)
      i = (i + 1) & mask_;
    slots_[i] = {key, value, true};
    ++size_;
  }
  // Erases a key that is present.
  void erase(std::uint64_t key) {
    std::size_t i = home(key);
    while (!slots_[i].used || slots_[i].key != key)
      i = (i + 1) & mask_;
    // Backward shift: an entry later in the probe run moves into the hole unless its home slot
    // lies cyclically in (hole, its slot], where it must stay to remain reachable.
    for (std::size_t j = (i + 1) & mask_; slots_[j].used; j = (j + 1) & mask_) {
      const std::size_t h = home(slots_[j].key);
      const bool stays = i <= j ? (i < h && h <= j) : (i < h || h <= j);
      if (stays) continue;
      slots_[i] = slots_[j];
      i = j;
    }
    slots_[i].used = false;
    --size_;
  }
  std::size_t size() const { return size_; }

 private:
  struct Slot {
    std::uint64_t key = 0;
    std::uint32_t value = 0;
    bool used = false;
  };
  // Fibonacci hashing: the top bits of key x 2^64/phi, so that keys differing in low bits only
  // (consecutive times, link indices) spread over the table.
  std::size_t home(std::uint64_t key) const {
    return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_);
  }
  void grow() {
    std::vector<Slot> old(std::max<std::size_t>(64, 2 * slots_.size()));
    old.swap(slots_);
    mask_ = slots_.size() - 1;
    shift_ = 64 - static_cast<unsigned>(std::countr_zero(slots_.size()));
    size_ = 0;
    for (const Slot& slot : old) {
      if (slot.used) insert(slot.key, slot.value);
    }
  }

  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
  unsigned shift_ = 64;
  std::size_t size_ = 0;
};

}  // namespace stepsim::engine
