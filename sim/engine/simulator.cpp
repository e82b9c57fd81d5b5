#include "sim/engine/simulator.hpp"

#include <stdexcept>
#include <string>

namespace stepsim::engine {

EventHandle Simulator::schedule_at(Time time, Action action) {
  if (time < now_) {
    throw std::logic_error("Simulator::schedule_at: time " + std::to_string(time.picoseconds()) +
                           " ps is before now (" + std::to_string(now_.picoseconds()) +
                           " ps); this is a bug in the caller");
  }
  std::uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<std::uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  const std::uint64_t sequence = next_sequence_++;
  Slot& s = slots_[slot];
  s.action = std::move(action);
  s.sequence = sequence;
  push(time.picoseconds(), {sequence, slot});
  ++live_events_;
  return EventHandle(slot, sequence);
}

bool Simulator::cancel(EventHandle handle) {
  if (!pending(handle)) return false;
  Slot& s = slots_[handle.slot_];
  s.action.reset();
  s.sequence = 0;
  free_slots_.push_back(handle.slot_);
  --live_events_;
  // The queue entry stays; it no longer matches the slot's sequence and is skipped when popped.
  return true;
}

bool Simulator::pending(EventHandle handle) const {
  return handle.sequence_ != 0 && handle.slot_ < slots_.size() &&
         slots_[handle.slot_].sequence == handle.sequence_;
}

void Simulator::run() {
  run_events(Time::max());
}

void Simulator::run_until(Time limit) {
  run_events(limit);
  if (limit > now_) now_ = limit;
}

void Simulator::run_events(Time limit) {
  const std::int64_t limit_ps = limit.picoseconds();
  for (;;) {
    if (!bucket_heap_.empty() && bucket_heap_.top().time_ps <= limit_ps) {
      const std::int64_t time_ps = bucket_heap_.top().time_ps;
      Bucket& bucket = buckets_[bucket_heap_.top().bucket];
      if (time_ps > now_.picoseconds() && !instant_end_.empty()) {
        fire_instant_end();
        continue;
      }
      const QueueEntry top = bucket.entries[bucket.head++];
      if (bucket.head == bucket.entries.size()) retire_front_bucket();
      Slot& s = slots_[top.slot];
      if (s.sequence != top.sequence) continue;  // cancelled
      now_ = Time::ps(time_ps);
      // Move the action out: it may schedule events, which may grow slots_.
      Action action = std::move(s.action);
      s.sequence = 0;
      free_slots_.push_back(top.slot);
      --live_events_;
      ++events_processed_;
      action();
      continue;
    }
    if (!instant_end_.empty()) {
      fire_instant_end();
      continue;
    }
    break;
  }
}

void Simulator::fire_instant_end() {
  instant_end_firing_.swap(instant_end_);
  for (InstantEndListener* listener : instant_end_firing_)
    listener->on_instant_end();
  instant_end_firing_.clear();
}

// Appends to the instant's bucket, opening one (and pushing it on the heap) when the instant has
// none.
void Simulator::push(std::int64_t time_ps, const QueueEntry& entry) {
  const auto key = static_cast<std::uint64_t>(time_ps);
  if (std::uint32_t* const found = bucket_at_.find(key)) {
    buckets_[*found].entries.push_back(entry);
    return;
  }
  std::uint32_t b;
  if (!free_buckets_.empty()) {
    b = free_buckets_.back();
    free_buckets_.pop_back();
  } else {
    b = static_cast<std::uint32_t>(buckets_.size());
    buckets_.emplace_back();
  }
  Bucket& bucket = buckets_[b];
  bucket.time_ps = time_ps;
  bucket.head = 0;
  bucket.entries.clear();
  bucket.entries.push_back(entry);
  bucket_at_.insert(key, b);
  bucket_heap_.push({time_ps, b});
}

void Simulator::retire_front_bucket() {
  const HeapEntry front = bucket_heap_.top();
  bucket_at_.erase(static_cast<std::uint64_t>(front.time_ps));
  free_buckets_.push_back(front.bucket);
  // The bottom-up pop: a new instant is usually later than most pending ones, so the last entry
  // belongs near the bottom (IndexedHeap::pop_bottom_up).
  bucket_heap_.pop_bottom_up();
}

}  // namespace stepsim::engine
