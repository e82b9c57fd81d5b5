// A map that keeps the most recently used entries within a budget of bytes: a least-recently-used
// (LRU) cache. Each entry is inserted with its size in bytes (as its owner counts it); inserting
// evicts the least recently used entries while the total is above the budget, but never the entry
// just inserted (one entry larger than the budget stays until the next insert).
//
// Values do not move while cached (they live in list nodes): a pointer or reference to a value
// stays valid until that entry is evicted, which only an insert does.
#pragma once

#include <cstddef>
#include <list>
#include <unordered_map>
#include <utility>

namespace stepsim::topology {

template <class Key, class Value, class Hash = std::hash<Key>>
class LruCache {
 public:
  explicit LruCache(std::size_t budget_bytes) : budget_bytes_(budget_bytes) {}

  // The value under `key`, which becomes the most recently used; nullptr when absent.
  Value* find(const Key& key) {
    const auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);
    return &order_.front().value;
  }
  // Inserts `value` under `key` (which must be absent) as the most recently used entry, counting
  // `bytes` for it, then evicts as the header says. Returns the value inserted.
  Value& insert(const Key& key, Value value, std::size_t bytes) {
    bytes_ += bytes;
    order_.push_front(Entry{key, std::move(value), bytes});
    index_.emplace(key, order_.begin());
    while (bytes_ > budget_bytes_ && order_.size() > 1) {
      const Entry& old = order_.back();
      bytes_ -= old.bytes;
      index_.erase(old.key);
      order_.pop_back();
    }
    return order_.front().value;
  }

  std::size_t size() const { return order_.size(); }
  // Sum of the sizes of the entries held.
  std::size_t bytes() const { return bytes_; }
  bool contains(const Key& key) const { return index_.count(key) != 0; }

 private:
  struct Entry {
    Key key;
    Value value;
    std::size_t bytes;
  };
  std::size_t budget_bytes_;
  std::size_t bytes_ = 0;
  std::list<Entry> order_;  // most recently used first
  std::unordered_map<Key, typename std::list<Entry>::iterator, Hash> index_;
};

}  // namespace stepsim::topology
