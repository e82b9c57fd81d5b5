// The discrete-event clock and event queue.
//
// Model: simulated time is a `Time` (integer picoseconds). Events are callables scheduled at a
// time; they run in order of (time, sequence number), the sequence number being the order in which
// they were scheduled, so events of one instant run first-scheduled first, never in an order that
// depends on addresses. An event may schedule or cancel other events, including at the current
// time.
//
// Cancelling goes through an EventHandle: a (slot, sequence number) pair. A slot is reused after
// its event ran or was cancelled, but with a new sequence number, so a stale handle never cancels a
// newer event; cancel() on it just returns false. No per-event shared_ptr, no per-event allocation
// for small callables (see InlineFunction).
//
// End of instant: a listener (the flow network) may ask to be called once after the last event of
// the current instant, before the clock advances. This is how all flow starts and ends of one
// instant are batched into one max-min solve. Listeners may schedule events at the current time;
// those run, and listeners that ask again are called again, before the clock moves on.
//
// There is no global state: any number of simulators can live side by side in one process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/common/units.hpp"
#include "sim/engine/flat_index.hpp"
#include "sim/engine/indexed_heap.hpp"
#include "sim/engine/inline_function.hpp"

namespace stepsim::engine {

// Identifies one scheduled event. Default-constructed handles refer to no event.
class EventHandle {
 public:
  EventHandle() = default;
  bool valid() const { return sequence_ != 0; }

 private:
  friend class Simulator;
  EventHandle(std::uint32_t slot, std::uint64_t sequence) : slot_(slot), sequence_(sequence) {}
  std::uint32_t slot_ = 0;
  std::uint64_t sequence_ = 0;
};

class Simulator {
 public:
  // What an event does. Callables up to 48 bytes are stored without allocation.
  using Action = InlineFunction<void(), 48>;

  // Something to call once at the end of the current instant (see the header comment).
  class InstantEndListener {
   public:
    virtual void on_instant_end() = 0;

   protected:
    virtual ~InstantEndListener() = default;
  };

  Simulator() = default;
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  Time now() const { return now_; }

  // Schedules `action` at `time`, which must not be before now() (std::logic_error otherwise).
  EventHandle schedule_at(Time time, Action action);
  // Schedules `action` at now() + delay; the delay must not be negative.
  EventHandle schedule_after(Time delay, Action action) {
    return schedule_at(now_ + delay, std::move(action));
  }

  // Cancels the event if it is still pending and returns true; returns false (and does nothing)
  // when it already ran, was cancelled, or the handle is empty.
  bool cancel(EventHandle handle);
  // True while the event is scheduled and has neither run nor been cancelled.
  bool pending(EventHandle handle) const;

  // Asks for `listener.on_instant_end()` after the last event of the current instant. The caller
  // keeps track of whether it already asked in this instant (each request is one call).
  void request_instant_end(InstantEndListener& listener) { instant_end_.push_back(&listener); }

  // Runs events until none is left.
  void run();
  // Runs every event scheduled at or before `limit`, then sets the clock to `limit` (if later).
  void run_until(Time limit);

  std::size_t pending_events() const { return live_events_; }
  std::uint64_t events_processed() const { return events_processed_; }

 private:
  // The queue: one bucket per instant that has events, holding them in the order they were
  // scheduled (which is sequence order, since sequence numbers only grow), and a binary heap of
  // the buckets by time. Many events share an instant in a training step (the transfers of a
  // collective, the flows that finish together), so the heap works per instant, not per event.
  struct QueueEntry {
    std::uint64_t sequence;
    std::uint32_t slot;
  };
  struct Bucket {
    std::int64_t time_ps = 0;
    std::size_t head = 0;  // next entry to run
    std::vector<QueueEntry> entries;
  };
  struct Slot {
    Action action;
    std::uint64_t sequence = 0;  // 0 when the slot is free
  };

  void run_events(Time limit);
  void push(std::int64_t time_ps, const QueueEntry& entry);
  void retire_front_bucket();
  // A heap entry carries its bucket's time, so that sifting compares without reading buckets.
  struct HeapEntry {
    std::int64_t time_ps;
    std::uint32_t bucket;
  };
  // Times are distinct per bucket, so the time alone orders the heap totally.
  struct EarlierBucket {
    bool operator()(const HeapEntry& a, const HeapEntry& b) const { return a.time_ps < b.time_ps; }
  };
  void fire_instant_end();

  Time now_ = Time::zero();
  std::uint64_t next_sequence_ = 1;
  std::vector<Bucket> buckets_;  // pool; free ones keep their capacity
  std::vector<std::uint32_t> free_buckets_;
  IndexedHeap<HeapEntry, EarlierBucket> bucket_heap_;  // no positions: only the top leaves
  FlatIndex bucket_at_;                                // time_ps -> bucket
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_slots_;
  std::vector<InstantEndListener*> instant_end_;
  std::vector<InstantEndListener*> instant_end_firing_;
  std::size_t live_events_ = 0;
  std::uint64_t events_processed_ = 0;
};

}  // namespace stepsim::engine
