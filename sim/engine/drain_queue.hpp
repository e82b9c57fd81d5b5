// Internal to the flow network: the draining classes by the picosecond their first target drains,
// taken in the order (drain end, class index).
//
// Replicas drain in step: the twin parts of a solve (twin_parts.hpp) get the same rates and most
// of their classes the same drain ends, so a solve sets many classes to an end that another class
// has just been given (86% of the settings in the DeepSeek-V3 12-layer slice). The queue is a heap
// of drain ends whose entries are either one class or a bucket of classes with that end. A class
// set to an end that an entry got recently (a small table of recent ends finds it) joins that
// entry, making it a bucket if it was one class, without a heap step; a class set to any other
// end has an entry of its own and moves as in a heap of classes. Two entries may share an end (a
// recent end forgotten): the classes due come out of every entry of the smallest end, sorted by
// index, so the order is that of a heap of (end, class) entries whatever the entries were.
//
// Each class's place in the queue is kept in its ClassDrain (queue_ref, queue_pos), beside the
// drain state that a rate change reads anyway.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "sim/engine/flow_tables.hpp"
#include "sim/engine/indexed_heap.hpp"

namespace stepsim::engine::detail {

class DrainQueue {
 public:
  // `drain` (per class; it must outlive the queue) holds each class's place in the queue.
  explicit DrainQueue(std::vector<ClassDrain>& drain) : drain_(drain) {}
  // The heap refers to vectors of its own queue.
  DrainQueue(const DrainQueue&) = delete;
  DrainQueue& operator=(const DrainQueue&) = delete;

  bool empty() const { return ends_.empty(); }
  // Classes queued.
  std::size_t size() const { return size_; }
  bool contains(std::uint32_t cls) const { return drain_[cls].queue_ref != kAbsent; }
  // The drain end a queued class has.
  std::int64_t end_of(std::uint32_t cls) const {
    const std::uint32_t ref = drain_[cls].queue_ref;
    return (ref & kBucketBit) != 0 ? buckets_[ref & ~kBucketBit].end_ps : ends_[ref].end_ps;
  }
  // The smallest drain end queued (not empty(), not in bulk).
  std::int64_t first_end() const { return ends_.top().end_ps; }

  // Between begin_bulk() and end_bulk(), set() and erase() change the heap without ordering it
  // and end_bulk() orders it once (linear time): for a solve that moves most of the queue, where
  // a heap step per change would cost more. first_end() and take_first() wait for end_bulk().
  void begin_bulk() { bulk_ = true; }
  void end_bulk() {
    bulk_ = false;
    ends_.make_heap();
  }

  // Between begin_moves() and end_moves() (not in bulk, each class set at most once, nothing
  // else asked of the queue), the set() calls of classes in buckets wait for end_moves(), which
  // moves a bucket whose classes all go to one end as a whole (its entry re-keyed: twins that
  // drained in step drain in step again) and the other classes one by one. Only the entries
  // differ from moving each at once: the ends and the order classes come out in are the same.
  void begin_moves() { moving_ = true; }
  void end_moves() {
    moving_ = false;
    if (pending_.empty()) return;
    for (const auto& [cls, end_ps] : pending_) {
      const std::uint32_t b = drain_[cls].queue_ref & ~kBucketBit;
      Bucket& bucket = buckets_[b];
      if (bucket.pending == 0) {
        bucket.pending_end = end_ps;
        moved_.push_back(b);
      } else if (bucket.pending_end != end_ps) {
        bucket.mixed = true;
      }
      ++bucket.pending;
    }
    for (const std::uint32_t b : moved_) {
      Bucket& bucket = buckets_[b];
      if (!bucket.mixed && bucket.pending == bucket.live) {
        bucket.end_ps = bucket.pending_end;
        ends_.update(bucket.heap_pos, {bucket.end_ps, kBucketBit | b});
        remember(bucket.end_ps, kBucketBit | b);
        bucket.pending = kWhole;
      } else {
        bucket.pending = 0;
      }
      bucket.mixed = false;
    }
    for (const auto& [cls, end_ps] : pending_) {
      if (buckets_[drain_[cls].queue_ref & ~kBucketBit].pending != kWhole) set_rest(cls, end_ps);
    }
    for (const std::uint32_t b : moved_) {
      if (buckets_[b].pending == kWhole) buckets_[b].pending = 0;
    }
    pending_.clear();
    moved_.clear();
  }

  // Queues `cls` at `end_ps` (>= 0), or moves it there. (The usual cases inline: a class with an
  // entry of its own moving to an end no entry got recently, or in bulk moving at all: bulk
  // changes join no other entry, as a heap of classes rebuilt would take them.)
  void set(std::uint32_t cls, std::int64_t end_ps) {
    const std::uint32_t ref = drain_[cls].queue_ref;
    if (ref != kAbsent && (ref & kBucketBit) == 0) {
      if (bulk_) {
        ends_.entry(ref).end_ps = end_ps;
        return;
      }
      if (ends_[ref].end_ps == end_ps) return;
      Recent& r = recent_[recent_slot(end_ps)];
      if (r.end_ps != end_ps) {
        move_entry(ref, {end_ps, cls});
        r = {end_ps, cls};
        return;
      }
    }
    set_rest(cls, end_ps);
  }
  // Takes `cls` out of the queue (nothing when it is not queued).
  void erase(std::uint32_t cls) {
    const std::uint32_t ref = drain_[cls].queue_ref;
    if (ref == kAbsent) return;
    if ((ref & kBucketBit) != 0) {
      leave_bucket(cls);
    } else {
      remove_entry(ref);
      drain_[cls].queue_ref = kAbsent;
    }
    --size_;
  }
  // Takes the classes with the smallest drain end out of the queue (not empty(), not in bulk)
  // into `due`, in increasing index; returns that end.
  std::int64_t take_first(std::vector<std::uint32_t>& due) {
    const std::int64_t end_ps = ends_.top().end_ps;
    due.clear();
    while (!ends_.empty() && ends_.top().end_ps == end_ps) {
      const std::uint32_t id = ends_.top().id;
      ends_.pop();
      if ((id & kBucketBit) != 0) {
        Bucket& b = buckets_[id & ~kBucketBit];
        for (std::uint32_t i = 0; i < b.classes.size(); ++i) {
          const std::uint32_t cls = b.classes[i];
          if (!member(cls, id, i)) continue;  // (left the bucket)
          due.push_back(cls);
          drain_[cls].queue_ref = kAbsent;
        }
        b.classes.clear();
        b.live = 0;
        free_buckets_.push_back(id & ~kBucketBit);
      } else {
        due.push_back(id);
        drain_[id].queue_ref = kAbsent;
      }
    }
    size_ -= due.size();
    std::sort(due.begin(), due.end());
    return end_ps;
  }

 private:
  static constexpr std::uint32_t kAbsent = 0xffffffffu;
  // In an entry's id and a class's queue_ref: a bucket (the low bits its index).
  static constexpr std::uint32_t kBucketBit = 0x80000000u;
  static constexpr unsigned kRecentBits = 8;
  static constexpr std::uint32_t kWhole = 0xffffffffu;  // Bucket::pending: moved as a whole
  struct Entry {
    std::int64_t end_ps;
    std::uint32_t id;  // a class, or kBucketBit | a bucket
  };
  // Ends only: which of two entries with one end comes first does not matter (take_first takes
  // them all and sorts their classes).
  struct Earlier {
    bool operator()(const Entry& a, const Entry& b) const { return a.end_ps < b.end_ps; }
  };
  struct Bucket {
    std::int64_t end_ps = 0;
    // Its classes in no order, a class's queue_pos its place here, and those that left it: a
    // class that leaves is not taken out (that would move the last one, a read of its
    // ClassDrain), only counted out; the list is compacted when most of it has left.
    std::vector<std::uint32_t> classes;
    std::uint32_t live = 0;  // the classes in the bucket
    // end_moves(): how many of them move, and where (mixed: not all to one end).
    std::uint32_t pending = 0;
    bool mixed = false;
    std::int64_t pending_end = 0;
    std::uint32_t heap_pos = 0;
  };
  struct Position {
    std::vector<ClassDrain>* drain;
    std::vector<Bucket>* buckets;
    void operator()(const Entry& e, std::uint32_t pos) const {
      if ((e.id & kBucketBit) != 0) {
        (*buckets)[e.id & ~kBucketBit].heap_pos = pos;
      } else {
        (*drain)[e.id].queue_ref = pos;
      }
    }
  };
  struct Recent {
    std::int64_t end_ps = -1;
    std::uint32_t id = kAbsent;
  };

  static std::size_t recent_slot(std::int64_t end_ps) {
    return static_cast<std::size_t>((static_cast<std::uint64_t>(end_ps) * 0x9E3779B97F4A7C15ull) >>
                                    (64 - kRecentBits));
  }
  // An entry with this end that was given it recently and still has it; else kAbsent.
  std::uint32_t recent(std::int64_t end_ps) const {
    const Recent& r = recent_[recent_slot(end_ps)];
    if (r.end_ps != end_ps || r.id == kAbsent) return kAbsent;
    if ((r.id & kBucketBit) != 0) {
      const Bucket& b = buckets_[r.id & ~kBucketBit];
      return b.live != 0 && b.end_ps == end_ps ? r.id : kAbsent;
    }
    const std::uint32_t ref = drain_[r.id].queue_ref;
    return ref != kAbsent && (ref & kBucketBit) == 0 && ends_[ref].end_ps == end_ps ? r.id
                                                                                    : kAbsent;
  }
  void remember(std::int64_t end_ps, std::uint32_t id) {
    recent_[recent_slot(end_ps)] = {end_ps, id};
  }

  // set() for the other cases.
  [[gnu::noinline]] void set_rest(std::uint32_t cls, std::int64_t end_ps) {
    const std::uint32_t ref = drain_[cls].queue_ref;
    if (ref == kAbsent) {
      ++size_;
    } else if ((ref & kBucketBit) != 0) {
      if (buckets_[ref & ~kBucketBit].end_ps == end_ps) return;
      if (moving_) {
        pending_.emplace_back(cls, end_ps);
        return;
      }
      leave_bucket(cls);
    } else {  // an entry of its own
      const std::uint32_t holder = recent(end_ps);
      if (holder == kAbsent) {
        move_entry(ref, {end_ps, cls});
        remember(end_ps, cls);
        return;
      }
      remove_entry(ref);
      drain_[cls].queue_ref = kAbsent;
      join(cls, holder);
      return;
    }
    const std::uint32_t holder = recent(end_ps);
    if (holder == kAbsent) {
      push_entry({end_ps, cls});
      remember(end_ps, cls);
    } else {
      join(cls, holder);
    }
  }
  // `cls` (out of the queue) joins the entry `holder` (recent()).
  void join(std::uint32_t cls, std::uint32_t holder) {
    std::uint32_t b;
    if ((holder & kBucketBit) != 0) {
      b = holder & ~kBucketBit;
    } else {  // the class alone there becomes a bucket of two, in its place in the heap
      const std::uint32_t pos = drain_[holder].queue_ref;
      b = new_bucket(ends_[pos].end_ps);
      ends_.entry(pos).id = kBucketBit | b;
      buckets_[b].heap_pos = pos;
      add_to_bucket(holder, b);
      remember(buckets_[b].end_ps, kBucketBit | b);
    }
    add_to_bucket(cls, b);
  }
  std::uint32_t new_bucket(std::int64_t end_ps) {
    std::uint32_t b;
    if (free_buckets_.empty()) {
      b = static_cast<std::uint32_t>(buckets_.size());
      buckets_.emplace_back();
    } else {
      b = free_buckets_.back();
      free_buckets_.pop_back();
    }
    buckets_[b].end_ps = end_ps;
    return b;
  }
  // Whether `cls`, listed at `pos` in the bucket `id` (kBucketBit | index), is still in it.
  bool member(std::uint32_t cls, std::uint32_t id, std::uint32_t pos) const {
    return drain_[cls].queue_ref == id && drain_[cls].queue_pos == pos;
  }
  void add_to_bucket(std::uint32_t cls, std::uint32_t b) {
    Bucket& bucket = buckets_[b];
    std::vector<std::uint32_t>& classes = bucket.classes;
    if (classes.size() >= 2 * static_cast<std::size_t>(bucket.live) + 16) {
      // Most have left: keep the members only.
      std::size_t kept = 0;
      for (std::uint32_t i = 0; i < classes.size(); ++i) {
        const std::uint32_t member_cls = classes[i];
        if (!member(member_cls, kBucketBit | b, i)) continue;
        drain_[member_cls].queue_pos = static_cast<std::uint32_t>(kept);
        classes[kept++] = member_cls;
      }
      classes.resize(kept);
    }
    drain_[cls].queue_ref = kBucketBit | b;
    drain_[cls].queue_pos = static_cast<std::uint32_t>(classes.size());
    classes.push_back(cls);
    ++bucket.live;
  }
  // Takes `cls` out of its bucket, and the bucket out of the heap when it empties.
  void leave_bucket(std::uint32_t cls) {
    const std::uint32_t b = drain_[cls].queue_ref & ~kBucketBit;
    Bucket& bucket = buckets_[b];
    drain_[cls].queue_ref = kAbsent;
    if (--bucket.live == 0) {
      bucket.classes.clear();
      remove_entry(bucket.heap_pos);
      free_buckets_.push_back(b);
    }
  }
  void push_entry(const Entry& e) {
    if (bulk_) {
      ends_.push_unordered(e);
    } else {
      ends_.push(e);
    }
  }
  void move_entry(std::uint32_t pos, const Entry& e) {
    if (bulk_) {
      ends_.entry(pos) = e;
    } else {
      ends_.update(pos, e);
    }
  }
  void remove_entry(std::uint32_t pos) {
    if (bulk_) {
      ends_.remove_unordered(pos);
    } else {
      ends_.remove(pos);
    }
  }

  std::vector<ClassDrain>& drain_;
  std::vector<Bucket> buckets_;
  std::vector<std::uint32_t> free_buckets_;
  std::array<Recent, std::size_t{1} << kRecentBits> recent_{};
  IndexedHeap<Entry, Earlier, Position> ends_{Position{&drain_, &buckets_}};
  std::size_t size_ = 0;
  bool bulk_ = false;
  bool moving_ = false;
  std::vector<std::pair<std::uint32_t, std::int64_t>> pending_;  // (class, end) to move
  std::vector<std::uint32_t> moved_;                             // buckets they are in
};

}  // namespace stepsim::engine::detail
