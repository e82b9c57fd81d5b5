#include "sim/engine/simulator.hpp"

#include <stdexcept>
#include <string>

namespace stepsim::engine {
namespace {

bool earlier(std::int64_t t1, std::uint64_t s1, std::int64_t t2, std::uint64_t s2) {
  return t1 < t2 || (t1 == t2 && s1 < s2);
}

}  // namespace

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
  push({time.picoseconds(), sequence, slot});
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
    if (!queue_.empty() && queue_.front().time_ps <= limit_ps) {
      const QueueEntry top = queue_.front();
      if (top.time_ps > now_.picoseconds() && !instant_end_.empty()) {
        fire_instant_end();
        continue;
      }
      pop();
      Slot& s = slots_[top.slot];
      if (s.sequence != top.sequence) continue;  // cancelled
      now_ = Time::ps(top.time_ps);
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

// A hand-written binary heap. The queue stays small in practice (hundreds to thousands of
// events), so the cost is in mispredicted branches, not memory: the child is chosen without a
// branch. (A 4-ary heap was tried: fewer levels, but three unpredictable comparisons per level
// made pops slower.)
void Simulator::push(const QueueEntry& entry) {
  std::size_t i = queue_.size();
  queue_.push_back(entry);
  while (i > 0) {
    const std::size_t parent = (i - 1) / 2;
    const QueueEntry& p = queue_[parent];
    if (!earlier(entry.time_ps, entry.sequence, p.time_ps, p.sequence)) break;
    queue_[i] = p;
    i = parent;
  }
  queue_[i] = entry;
}

void Simulator::pop() {
  const QueueEntry last = queue_.back();
  queue_.pop_back();
  const std::size_t n = queue_.size();
  if (n == 0) return;
  // Sift the hole at the root down to a leaf along the smaller children, then sift `last` up:
  // fewer comparisons than the textbook sift-down, since `last` usually belongs near the bottom.
  std::size_t i = 0;
  for (;;) {
    std::size_t child = 2 * i + 1;
    if (child >= n) break;
    if (child + 1 < n) {
      const QueueEntry& a = queue_[child + 1];
      const QueueEntry& b = queue_[child];
      child += static_cast<std::size_t>((a.time_ps < b.time_ps) |
                                        ((a.time_ps == b.time_ps) & (a.sequence < b.sequence)));
    }
    queue_[i] = queue_[child];
    i = child;
  }
  while (i > 0) {
    const std::size_t parent = (i - 1) / 2;
    const QueueEntry& p = queue_[parent];
    if (!earlier(last.time_ps, last.sequence, p.time_ps, p.sequence)) break;
    queue_[i] = p;
    i = parent;
  }
  queue_[i] = last;
}

}  // namespace stepsim::engine
