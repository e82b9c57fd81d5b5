#include "sim/engine/simulator.hpp"

#include <gtest/gtest.h>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace stepsim::engine {
namespace {

TEST(Simulator, RunsEventsByTimeThenBySchedulingOrder) {
  Simulator sim;
  std::vector<int> order;
  sim.schedule_at(Time::ns(30), [&] { order.push_back(1); });
  sim.schedule_at(Time::ns(10), [&] { order.push_back(2); });
  sim.schedule_at(Time::ns(20), [&] { order.push_back(3); });
  sim.schedule_at(Time::ns(10), [&] { order.push_back(4); });
  sim.run();
  // Times 10, 10, 20, 30; the two at 10 ns in the order they were scheduled.
  EXPECT_EQ(order, (std::vector<int>{2, 4, 3, 1}));
  EXPECT_EQ(sim.now(), Time::ns(30));
  EXPECT_EQ(sim.events_processed(), 4u);
  EXPECT_EQ(sim.pending_events(), 0u);
}

TEST(Simulator, EventsMayScheduleEventsAtTheCurrentTime) {
  Simulator sim;
  std::vector<Time> seen;
  sim.schedule_at(Time::us(1), [&] {
    seen.push_back(sim.now());
    sim.schedule_after(Time::zero(), [&] { seen.push_back(sim.now()); });
    sim.schedule_after(Time::ns(5), [&] { seen.push_back(sim.now()); });
  });
  sim.run();
  EXPECT_EQ(seen, (std::vector<Time>{Time::us(1), Time::us(1), Time::us(1) + Time::ns(5)}));
}

TEST(Simulator, CancelledEventDoesNotRun) {
  Simulator sim;
  int runs = 0;
  const EventHandle h = sim.schedule_at(Time::ns(5), [&] { ++runs; });
  EXPECT_TRUE(sim.pending(h));
  EXPECT_TRUE(sim.cancel(h));
  EXPECT_FALSE(sim.pending(h));
  EXPECT_FALSE(sim.cancel(h));  // second cancel: nothing to do
  sim.run();
  EXPECT_EQ(runs, 0);
  EXPECT_EQ(sim.events_processed(), 0u);
}

TEST(Simulator, HandleOfAnEventThatRanIsSafeAndDoesNotCancelItsSlotsNextEvent) {
  Simulator sim;
  int first = 0;
  int second = 0;
  const EventHandle h1 = sim.schedule_at(Time::ns(1), [&] { ++first; });
  sim.run();
  EXPECT_FALSE(sim.cancel(h1));  // already ran
  // The next event reuses the slot of the first one; the old handle must not reach it.
  const EventHandle h2 = sim.schedule_at(Time::ns(2), [&] { ++second; });
  EXPECT_FALSE(sim.cancel(h1));
  EXPECT_TRUE(sim.pending(h2));
  sim.run();
  EXPECT_EQ(first, 1);
  EXPECT_EQ(second, 1);
}

TEST(Simulator, CancelReleasesTheCapturedState) {
  Simulator sim;
  auto token = std::make_shared<int>(1);
  const EventHandle h = sim.schedule_at(Time::ns(1), [token] { (void)token; });
  EXPECT_EQ(token.use_count(), 2);
  sim.cancel(h);
  EXPECT_EQ(token.use_count(), 1);
}

TEST(Simulator, SchedulingInThePastIsABug) {
  Simulator sim;
  sim.schedule_at(Time::ns(10), [] {});
  sim.run();
  EXPECT_THROW(sim.schedule_at(Time::ns(9), [] {}), std::logic_error);
}

TEST(Simulator, RunUntilStopsAtTheLimitAndMovesTheClockThere) {
  Simulator sim;
  std::vector<int> order;
  sim.schedule_at(Time::ns(10), [&] { order.push_back(10); });
  sim.schedule_at(Time::ns(20), [&] { order.push_back(20); });
  sim.schedule_at(Time::ns(30), [&] { order.push_back(30); });
  sim.run_until(Time::ns(20));  // 20 is included
  EXPECT_EQ(order, (std::vector<int>{10, 20}));
  EXPECT_EQ(sim.now(), Time::ns(20));
  sim.run_until(Time::ns(25));
  EXPECT_EQ(sim.now(), Time::ns(25));
  EXPECT_EQ(sim.pending_events(), 1u);
  sim.run();
  EXPECT_EQ(order, (std::vector<int>{10, 20, 30}));
}

struct RecordingListener : Simulator::InstantEndListener {
  explicit RecordingListener(Simulator& s, std::vector<std::string>& l) : sim(s), log(l) {}
  void on_instant_end() override {
    log.push_back("end@" + std::to_string(sim.now().picoseconds()));
    if (again) {
      again = false;
      sim.schedule_after(Time::zero(), [this] { log.push_back("late event"); });
      sim.request_instant_end(*this);
    }
  }
  Simulator& sim;
  std::vector<std::string>& log;
  bool again = false;
};

TEST(Simulator, InstantEndListenerRunsAfterTheLastEventOfTheInstant) {
  Simulator sim;
  std::vector<std::string> log;
  RecordingListener listener(sim, log);
  sim.schedule_at(Time::ps(5), [&] {
    log.push_back("a");
    sim.request_instant_end(listener);
  });
  sim.schedule_at(Time::ps(5), [&] { log.push_back("b"); });
  sim.schedule_at(Time::ps(7), [&] {
    log.push_back("c");
    listener.again = true;
    sim.request_instant_end(listener);
  });
  sim.schedule_at(Time::ps(9), [&] { log.push_back("d"); });
  sim.run();
  // The listener runs after both events at 5 ps and before the one at 7 ps; at 7 ps it schedules
  // an event at 7 ps and asks again, so it runs twice there, around that event.
  EXPECT_EQ(
      log, (std::vector<std::string>{"a", "b", "end@5", "c", "end@7", "late event", "end@7", "d"}));
}

TEST(Simulator, TwoSimulatorsRunSideBySide) {
  Simulator a;
  Simulator b;
  std::vector<std::string> log;
  a.schedule_at(Time::ns(2), [&] { log.push_back("a2"); });
  b.schedule_at(Time::ns(1), [&] { log.push_back("b1"); });
  a.schedule_at(Time::ns(1), [&] { log.push_back("a1"); });
  b.run_until(Time::ns(1));
  a.run();
  b.run();
  EXPECT_EQ(log, (std::vector<std::string>{"b1", "a1", "a2"}));
  EXPECT_EQ(a.now(), Time::ns(2));
  EXPECT_EQ(b.now(), Time::ns(1));
  EXPECT_EQ(a.events_processed(), 2u);
  EXPECT_EQ(b.events_processed(), 1u);
}

TEST(Simulator, ManyInterleavedEventsComeOutSorted) {
  // 10,000 events at pseudo-random times: popped times never decrease (heap order), and each
  // event runs exactly once.
  Simulator sim;
  std::uint64_t x = 12345;
  std::int64_t last = -1;
  int runs = 0;
  bool sorted = true;
  for (int i = 0; i < 10000; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    sim.schedule_at(Time::ps(static_cast<std::int64_t>(x >> 44)), [&] {
      sorted = sorted && sim.now().picoseconds() >= last;
      last = sim.now().picoseconds();
      ++runs;
    });
  }
  sim.run();
  EXPECT_TRUE(sorted);
  EXPECT_EQ(runs, 10000);
}

}  // namespace
}  // namespace stepsim::engine
