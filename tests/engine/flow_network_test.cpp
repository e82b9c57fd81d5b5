#include "sim/engine/flow_network.hpp"

#include <gtest/gtest.h>
#include <map>
#include <random>
#include <stdexcept>
#include <vector>

namespace stepsim::engine {
namespace {

constexpr double kGBps = 1e9;  // 1 GB/s in bytes per second

// A simulator and a network, the completion time of every flow by FlowId, and the invariants
// checked after every test.
class FlowNetworkTest : public ::testing::Test {
 protected:
  void TearDown() override {
    net.check_invariants();
    EXPECT_EQ(net.active_flows(), 0u) << "every flow must finish";
  }
  LinkId link(double bytes_per_second, Time latency = Time::zero()) {
    return net.add_link(BytesPerSecond(bytes_per_second), latency);
  }
  FlowId start(std::int64_t bytes, std::vector<LinkId> path) {
    return net.start_flow(0, 1, Bytes(bytes), path, [this](const FlowCompletion& done) {
      finish[done.id] = done.finish;
      EXPECT_EQ(done.finish, sim.now());
      net.check_invariants();
    });
  }
  Time at(FlowId f) const { return finish.at(f); }

  Simulator sim;
  FlowNetwork net{sim};
  std::map<FlowId, Time> finish;
};

TEST_F(FlowNetworkTest, OneFlowTakesPathLatencyPlusBytesOverBottleneck) {
  // 1 MB over links of 1 GB/s (1 us) and 2 GB/s (2 us): 1e6 / 1e9 s = 1 ms at the bottleneck,
  // plus 3 us of latency.
  const LinkId a = link(1 * kGBps, Time::us(1));
  const LinkId b = link(2 * kGBps, Time::us(2));
  const FlowId f = start(1'000'000, {a, b});
  sim.run();
  EXPECT_EQ(at(f), Time::ms(1) + Time::us(3));
}

TEST_F(FlowNetworkTest, EqualFlowsOnOneLinkFinishTogetherAfterNTimesBytesOverBandwidth) {
  // 8 flows of 1 MB on 1 GB/s: each gets 1/8 GB/s and all finish at 8 * 1e6 / 1e9 s = 8 ms, in
  // one instant. One solve when they start, one when they finish.
  const LinkId l = link(1 * kGBps);
  std::vector<FlowId> flows;
  for (int i = 0; i < 8; ++i)
    flows.push_back(start(1'000'000, {l}));
  sim.run_until(Time::ps(1));
  EXPECT_DOUBLE_EQ(net.current_rate(flows[0]).value(), kGBps / 8);
  sim.run();
  for (const FlowId f : flows)
    EXPECT_EQ(at(f), Time::ms(8));
  EXPECT_EQ(net.solves(), 2u);
}

TEST_F(FlowNetworkTest, UnequalFlowsOnOneLinkFinishInTurn) {
  // 1, 2 and 3 MB on 1 GB/s, by hand: three flows at 1/3 GB/s until the first has moved 1 MB
  // (3 ms); two at 1/2 GB/s until the second has moved its remaining 1 MB (2 ms more: 5 ms); the
  // last alone moves its remaining 1 MB in 1 ms: 6 ms = total bytes / bandwidth.
  const LinkId l = link(1 * kGBps);
  const FlowId f1 = start(1'000'000, {l});
  const FlowId f2 = start(2'000'000, {l});
  const FlowId f3 = start(3'000'000, {l});
  sim.run();
  EXPECT_EQ(at(f1), Time::ms(3));
  EXPECT_EQ(at(f2), Time::ms(5));
  EXPECT_EQ(at(f3), Time::ms(6));
}

TEST_F(FlowNetworkTest, ACappedFlowLeavesTheRestOfItsLinkToTheOthers) {
  // A 100 GB/s link: two flows capped at 30 GB/s (one class: same path, same cap) and one
  // uncapped take 30, 30 and 40 GB/s. 3 GB each: the uncapped one ends first, at 3 / 40 = 75 ms,
  // and the capped ones stay at their cap after it (the link is no longer full): 3 / 30 = 100 ms.
  const LinkId l = link(100 * kGBps);
  const BytesPerSecond cap(30 * kGBps);
  const std::vector<LinkId> path{l};
  auto capped = [&] {
    return net.start_flow(0, 1, Bytes(3'000'000'000), path, cap,
                          [this](const FlowCompletion& done) { finish[done.id] = done.finish; });
  };
  const FlowId a = capped(), b = capped();
  const FlowId c = start(3'000'000'000, {l});
  sim.run_until(Time::us(1));
  EXPECT_DOUBLE_EQ(net.current_rate(a).value(), 30 * kGBps);
  EXPECT_DOUBLE_EQ(net.current_rate(b).value(), 30 * kGBps);
  EXPECT_DOUBLE_EQ(net.current_rate(c).value(), 40 * kGBps);
  sim.run();
  EXPECT_EQ(at(c), Time::ms(75));
  EXPECT_EQ(at(a), Time::ms(100));
  EXPECT_EQ(at(b), Time::ms(100));
  EXPECT_THROW(net.start_flow(0, 1, Bytes(1), path, BytesPerSecond(0.0), FlowCallback()),
               std::invalid_argument);
}

TEST_F(FlowNetworkTest, ParkingLot) {
  // Three 1 GB/s links in a row; a 3 MB flow over all three and a 1 MB flow on each link. Max-min
  // gives every flow 0.5 GB/s (two flows per link): the short flows finish at 1e6 / 0.5e9 = 2 ms,
  // when the long one has moved 1 MB; it then runs alone at 1 GB/s for its last 2 MB: 4 ms.
  const LinkId a = link(kGBps);
  const LinkId b = link(kGBps);
  const LinkId c = link(kGBps);
  const FlowId lng = start(3'000'000, {a, b, c});
  const FlowId s1 = start(1'000'000, {a});
  const FlowId s2 = start(1'000'000, {b});
  const FlowId s3 = start(1'000'000, {c});
  sim.run_until(Time::ps(1));
  EXPECT_DOUBLE_EQ(net.current_rate(lng).value(), 0.5 * kGBps);
  EXPECT_DOUBLE_EQ(net.current_rate(s2).value(), 0.5 * kGBps);
  sim.run();
  EXPECT_EQ(at(s1), Time::ms(2));
  EXPECT_EQ(at(s2), Time::ms(2));
  EXPECT_EQ(at(s3), Time::ms(2));
  EXPECT_EQ(at(lng), Time::ms(4));
}

TEST_F(FlowNetworkTest, LinksOfDifferentCapacities) {
  // Links A = 1, B = 10, C = 2 GB/s; f1, f2 on A; f3 on A and B; f4 on B and C; f5 on C. By
  // progressive filling (see MaxMinSolver.LinksOfDifferentCapacities): f1 = f2 = f3 = 1/3 GB/s,
  // f4 = f5 = 1 GB/s. With 1 MB each, f4 and f5 finish at 1 ms. Then A still limits f1..f3
  // (1/3 each) and B has f3 alone: nothing changes for them, they finish at 3 ms.
  const LinkId a = link(1 * kGBps);
  const LinkId b = link(10 * kGBps);
  const LinkId c = link(2 * kGBps);
  const FlowId f1 = start(1'000'000, {a});
  const FlowId f2 = start(1'000'000, {a});
  const FlowId f3 = start(1'000'000, {a, b});
  const FlowId f4 = start(1'000'000, {b, c});
  const FlowId f5 = start(1'000'000, {c});
  sim.run_until(Time::ps(1));
  EXPECT_DOUBLE_EQ(net.current_rate(f1).value(), kGBps / 3);
  EXPECT_DOUBLE_EQ(net.current_rate(f3).value(), kGBps / 3);
  EXPECT_DOUBLE_EQ(net.current_rate(f4).value(), kGBps);
  EXPECT_DOUBLE_EQ(net.current_rate(f5).value(), kGBps);
  EXPECT_DOUBLE_EQ(net.load(b).value(), kGBps / 3 + kGBps);
  sim.run();
  EXPECT_EQ(at(f4), Time::ms(1));
  EXPECT_EQ(at(f5), Time::ms(1));
  EXPECT_EQ(at(f1), Time::ms(3));
  EXPECT_EQ(at(f2), Time::ms(3));
  EXPECT_EQ(at(f3), Time::ms(3));
}

TEST_F(FlowNetworkTest, FlowsWithDifferentPathLatencies) {
  // Two 1 MB flows share a 1 GB/s link (no latency); the second also crosses a 5 us link of
  // 10 GB/s. Both drain at 0.5 GB/s until 2 ms; the second completes 5 us later.
  const LinkId shared = link(1 * kGBps);
  const LinkId far = link(10 * kGBps, Time::us(5));
  const FlowId near_flow = start(1'000'000, {shared});
  const FlowId far_flow = start(1'000'000, {shared, far});
  sim.run();
  EXPECT_EQ(at(near_flow), Time::ms(2));
  EXPECT_EQ(at(far_flow), Time::ms(2) + Time::us(5));
}

TEST_F(FlowNetworkTest, ZeroByteFlowTakesTheLatencyAloneAndTakesNoBandwidth) {
  // A zero-byte flow over links of 1 us and 2 us latency completes at 3 us; the 1 MB flow on the
  // same first link is not slowed: 1 ms.
  const LinkId a = link(1 * kGBps, Time::us(1));
  const LinkId b = link(1 * kGBps, Time::us(2));
  const FlowId empty = start(0, {a, b});
  const FlowId full = start(1'000'000, {a});
  sim.run();
  EXPECT_EQ(at(empty), Time::us(3));
  EXPECT_EQ(at(full), Time::ms(1) + Time::us(1));
}

TEST_F(FlowNetworkTest, FlowWithAnEmptyPathCompletesAtOnce) {
  sim.run_until(Time::us(7));
  const FlowId f = start(1'000'000, {});
  sim.run();
  EXPECT_EQ(at(f), Time::us(7));
}

TEST_F(FlowNetworkTest, FlowStartingExactlyWhenAnotherEndsDoesNotShareWithIt) {
  // A (1 MB, 1 GB/s) drains alone in exactly 1 ms. At 1 ms an independent event starts B and A's
  // completion callback starts C: B and C share the link from 1 ms at 0.5 GB/s each and finish
  // at 1 + 2 = 3 ms. The instant at 1 ms (A's end, B's and C's start) is one solve: 3 in all
  // (0, 1 and 3 ms).
  const LinkId l = link(1 * kGBps);
  FlowId b;
  FlowId c;
  const FlowId a = net.start_flow(0, 1, Bytes(1'000'000), std::vector<LinkId>{l},
                                  [&](const FlowCompletion& done) {
                                    finish[done.id] = done.finish;
                                    c = start(1'000'000, {l});
                                  });
  sim.schedule_at(Time::ms(1), [&] { b = start(1'000'000, {l}); });
  sim.run();
  EXPECT_EQ(at(a), Time::ms(1));
  EXPECT_EQ(at(b), Time::ms(3));
  EXPECT_EQ(at(c), Time::ms(3));
  EXPECT_EQ(net.solves(), 3u);
}

TEST_F(FlowNetworkTest, MultiPathFlowIsSplitByWeight) {
  // 3 MB over two disjoint 1 GB/s paths with weights 2 and 1: parts of 2 MB and 1 MB draining at
  // 1 GB/s each (rate 2 GB/s in all), done at 2 ms and 1 ms; the flow completes with its last part
  // at 2 ms plus that path's 1 us latency.
  const LinkId p1 = link(1 * kGBps, Time::us(1));
  const LinkId p2 = link(1 * kGBps, Time::us(4));
  const std::vector<LinkId> path1{p1};
  const std::vector<LinkId> path2{p2};
  const std::vector<WeightedPath> paths{{path1, 2.0}, {path2, 1.0}};
  Time done_at;
  const FlowId f = net.start_flow(3, 4, Bytes(3'000'000), paths, [&](const FlowCompletion& done) {
    done_at = done.finish;
    EXPECT_EQ(done.source, 3);
    EXPECT_EQ(done.destination, 4);
    EXPECT_EQ(done.bytes, Bytes(3'000'000));
  });
  sim.run_until(Time::ps(1));
  EXPECT_DOUBLE_EQ(net.current_rate(f).value(), 2 * kGBps);
  sim.run_until(Time::ms(1) + Time::ps(1));
  EXPECT_DOUBLE_EQ(net.current_rate(f).value(), 1 * kGBps);  // only the 2 MB part still drains
  sim.run();
  EXPECT_EQ(done_at, Time::ms(2) + Time::us(1));
  EXPECT_DOUBLE_EQ(net.current_rate(f).value(), 0.0);
}

TEST_F(FlowNetworkTest, SprayedFlowOverKParallelLinksDrainsAtTheirSum) {
  // A transfer sprayed over k = 7 parallel 28 GB/s links (a die's 7 UB planes), between a fast
  // first and last link: share 1/7 on each plane, 1 on the ends. Closed form: bytes / (k x 28
  // GB/s) plus the given latency: 1 GB / 196 GB/s = 5.102040816 ms + 1 us. A plain flow over one
  // of the planes takes 1 GB / 28 GB/s.
  const LinkId first = link(1000 * kGBps);
  const LinkId last = link(1000 * kGBps);
  std::vector<LinkShare> links{{first, 1.0}, {last, 1.0}};
  for (int k = 0; k < 7; ++k)
    links.push_back({link(28 * kGBps), 1.0 / 7});
  Time sprayed;
  net.start_sprayed_flow(0, 1, Bytes(1'000'000'000), links, Time::us(1),
                         [&](const FlowCompletion& done) { sprayed = done.finish; });
  sim.run();
  const double expected_ps = 1e9 / (7 * 28 * kGBps) * 1e12 + 1e6;
  EXPECT_NEAR(static_cast<double>(sprayed.picoseconds()), expected_ps, 1.0);
  // Every plane carried 1/7 of the bytes, the ends all of them (within what one picosecond of
  // the rounded-up drain end adds: 196 GB/s x 1 ps = 0.196 bytes).
  for (std::size_t i = 2; i < links.size(); ++i)
    EXPECT_NEAR(net.link_statistics(links[i].link).bytes_carried, 1e9 / 7, 0.2);
  EXPECT_NEAR(net.link_statistics(first).bytes_carried, 1e9, 0.2);
}

TEST_F(FlowNetworkTest, SprayedFlowsShareParallelLinksWithPlainFlows) {
  // Two 1 GB/s links. A sprayed flow (1/2, 1/2) and a plain flow on link 0: link 0 holds r/2 + p,
  // link 1 r/2. Water-filling: link 0 saturates at 1.5 x = 1 GB/s, x = 2/3 GB/s for both; the
  // plain flow is frozen there, the sprayed one too (it crosses link 0).
  const LinkId a = link(1 * kGBps);
  const LinkId b = link(1 * kGBps);
  const std::vector<LinkShare> spray{{a, 0.5}, {b, 0.5}};
  Time sprayed;
  net.start_sprayed_flow(0, 1, Bytes(2'000'000), spray, Time::zero(),
                         [&](const FlowCompletion& done) { sprayed = done.finish; });
  const FlowId plain = start(1'000'000, {a});
  sim.run_until(Time::ps(1));
  EXPECT_DOUBLE_EQ(net.current_rate(plain).value(), kGBps * 2 / 3);
  sim.run();
  // Plain: 1 MB at 2/3 GB/s = 1.5 ms. The sprayed flow drained 1 MB by then and is alone for its
  // second MB at 2 GB/s (each link carries half): 0.5 ms more, 2 ms in all.
  EXPECT_EQ(at(plain), Time::us(1500));
  EXPECT_NEAR(static_cast<double>(sprayed.picoseconds()), 2e9, 1.0);
}

TEST_F(FlowNetworkTest, ASprayedLinkListedTwiceCarriesTheSumOfItsShares) {
  // Link a listed at 1/4 twice is link a at 1/2 (a route through a relay lists its two parts one
  // after the other): 1 MB over a 1 GB/s link at share 1/2 drains at 2 GB/s, 0.5 ms; b (share 1)
  // is a 4 GB/s link and does not bind.
  const LinkId a = link(1 * kGBps);
  const LinkId b = link(4 * kGBps);
  const std::vector<LinkShare> twice{{a, 0.25}, {b, 1.0}, {a, 0.25}};
  Time done_at;
  net.start_sprayed_flow(0, 1, Bytes(1'000'000), twice, Time::zero(),
                         [&](const FlowCompletion& done) { done_at = done.finish; });
  sim.run();
  EXPECT_EQ(done_at, Time::us(500));
  EXPECT_NEAR(net.link_statistics(a).bytes_carried, 0.5e6, 0.01);
}

TEST_F(FlowNetworkTest, APlainLinkListedTwiceCarriesTheFlowTwice) {
  // A path through link a, then b, then a again: each byte crosses a twice. With a second flow
  // on a alone, max-min gives both the same rate x with 2x + x = 1 GB/s: 1 MB each at 1/3 GB/s,
  // both done at 3 ms, and a carries 3 MB (b, 4 GB/s, does not bind).
  const LinkId a = link(1 * kGBps);
  const LinkId b = link(4 * kGBps);
  const FlowId looped = start(1'000'000, {a, b, a});
  const FlowId plain = start(1'000'000, {a});
  sim.run();
  EXPECT_EQ(at(looped), Time::ms(3));
  EXPECT_EQ(at(plain), Time::ms(3));
  EXPECT_NEAR(net.link_statistics(a).bytes_carried, 3e6, 0.01);
}

TEST_F(FlowNetworkTest, ClassesLeaveTheirLinksInAnyOrder) {
  // Classes leave the links' lists by swap-removal, and the class moved into the hole has the
  // slot of that listing fixed (a class whose path lists the link twice has two). 300 flows on 5
  // links, plain paths that may list a link twice or three times and sprayed ones, of random
  // sizes and start times, so that classes join and leave in every order: after every completion
  // the invariants hold (check_invariants finds each class at each of its slots).
  std::mt19937_64 rng(18);
  std::vector<LinkId> links;
  for (int l = 0; l < 5; ++l)
    links.push_back(link((1 + l) * kGBps));
  std::uniform_int_distribution<std::size_t> pick(0, links.size() - 1);
  int done = 0;
  for (int f = 0; f < 300; ++f) {
    const std::size_t length = std::uniform_int_distribution<std::size_t>(1, 4)(rng);
    const auto bytes = std::uniform_int_distribution<std::int64_t>(1'000, 100'000)(rng);
    const Time when = Time::ns(std::uniform_int_distribution<std::int64_t>(0, 50'000)(rng));
    const bool sprayed = f % 3 == 0;
    std::vector<LinkShare> path;
    for (std::size_t i = 0; i < length; ++i)
      path.push_back({links[pick(rng)], std::uniform_real_distribution<double>(0.1, 1.0)(rng)});
    sim.schedule_at(when, [this, path, bytes, sprayed, &done] {
      if (sprayed) {
        net.start_sprayed_flow(0, 1, Bytes(bytes), path, Time::zero(),
                               [this, &done](const FlowCompletion&) {
                                 ++done;
                                 net.check_invariants();
                               });
      } else {
        std::vector<LinkId> plain;
        for (const LinkShare& l : path)
          plain.push_back(l.link);
        start(bytes, plain);
      }
    });
  }
  sim.run();
  EXPECT_EQ(done + static_cast<int>(finish.size()), 300);
}

TEST_F(FlowNetworkTest, LinkStatistics) {
  // Two 1 MB flows on a 1 GB/s link: busy from 0 to 2 ms, carrying 2 MB. Seen over a 4 ms
  // window: utilization 2e6 / (1e9 * 4e-3) = 0.5; at most 2 flows at once.
  FlowNetwork sampled(sim,
                      FlowNetworkOptions{.record_utilization_samples = true, .sampled_links = {}});
  const LinkId l = sampled.add_link(BytesPerSecond(kGBps), Time::zero());
  int done = 0;
  for (int i = 0; i < 2; ++i) {
    sampled.start_flow(0, 1, Bytes(1'000'000), std::vector<LinkId>{l},
                       [&](const FlowCompletion&) { ++done; });
  }
  sim.run_until(Time::ms(4));
  EXPECT_EQ(done, 2);
  const LinkStatistics s = sampled.link_statistics(l);
  EXPECT_NEAR(s.bytes_carried, 2e6, 1e-6);
  EXPECT_EQ(s.busy_time, Time::ms(2));
  EXPECT_NEAR(s.utilization, 0.5, 1e-12);
  EXPECT_EQ(s.peak_flows, 2u);
  // Samples: full from 0, idle from 2 ms.
  const auto samples = sampled.utilization_samples(l);
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_EQ(samples[0].time, Time::zero());
  EXPECT_DOUBLE_EQ(samples[0].utilization, 1.0);
  EXPECT_EQ(samples[1].time, Time::ms(2));
  EXPECT_DOUBLE_EQ(samples[1].utilization, 0.0);
  sampled.check_invariants();
  // A new window from 4 ms on sees nothing yet.
  sampled.restart_statistics();
  sim.run_until(Time::ms(5));
  EXPECT_EQ(sampled.link_statistics(l).bytes_carried, 0.0);
  EXPECT_EQ(sampled.link_statistics(l).peak_flows, 0u);
}

TEST_F(FlowNetworkTest, ALinkWithSpareCapacityThatFillsUpJoinsTheSolve) {
  // X (2 GB/s) carries a and b; Y (6.5 GB/s) carries b and c; Z (5 GB/s) carries c. From 0:
  // X saturates at 1 GB/s each for a and b; c is limited by Z to 5; Y carries 6 of 6.5 (spare).
  // a (1 MB) leaves at 1 ms. The re-solve starts from X and does not cross Y (not saturated), so
  // Y is a boundary link with 6.5 - 5 = 1.5 GB/s left for b: b would get 1.5 and fill Y. Then Y
  // joins the search (c comes in) and the solve is repeated: max-min gives b 2 (bottleneck X) and
  // c 6.5 - 2 = 4.5 (bottleneck Y, where c has the larger rate), not b 1.5 and c 5.
  const LinkId x = link(2 * kGBps), y = link(6.5 * kGBps), z = link(5 * kGBps);
  start(1'000'000, {x});
  const FlowId b = start(1'000'000'000, {x, y});
  const FlowId c = start(1'000'000'000, {y, z});
  sim.run_until(Time::us(500));
  EXPECT_DOUBLE_EQ(net.current_rate(b).value(), 1 * kGBps);
  EXPECT_DOUBLE_EQ(net.current_rate(c).value(), 5 * kGBps);
  const std::uint64_t expansions = net.boundary_expansions();
  const std::uint64_t estimates = net.boundary_estimates();
  const std::uint64_t refused = net.boundary_estimates_refused();
  sim.run_until(Time::ms(1) + Time::us(1));
  EXPECT_NEAR(net.current_rate(b).value(), 2 * kGBps, 1e-6);
  EXPECT_NEAR(net.current_rate(c).value(), 4.5 * kGBps, 1e-6);
  EXPECT_EQ(net.boundary_expansions(), expansions + 1);
  // Y first takes part without a limit, its outside load bounded by its load
  // less b's (6 - 1 = 5 GB/s); b then gets 2 and Y would carry 7 > 6.5, so Y is summed exactly
  // after all (refused), found full, and crossed.
  EXPECT_EQ(net.boundary_estimates(), estimates + 1);
  EXPECT_EQ(net.boundary_estimates_refused(), refused + 1);
  // b keeps 2 GB/s to the end: 1 MB in the first ms, 999 MB at 2 GB/s, done at 500.5 ms; c
  // drains its remaining 995 MB at 4.5 GB/s, done at 1 ms + 221.111 ms.
  sim.run();
  EXPECT_EQ(at(b), Time::us(500'500));
  EXPECT_NEAR(at(c).seconds(), 1e-3 + 995e6 / 4.5e9, 1e-12);
}

TEST_F(FlowNetworkTest, AnArrivalOnALinkAnotherPartReachesFirstIsSolvedWithIt) {
  // f1 crosses A (10 GB/s, full) and C (100 GB/s, a tenth used). Then, in one instant, f2 joins
  // A and f3 starts on C alone. The search from f2's link A reaches C through f1 before it takes
  // f3's link: C must be crossed all the same (a changed class's link), or f3 is left without a
  // rate. Rates: f1 and f2 5 GB/s each (A), f3 the 95 GB/s that f1 leaves on C.
  const LinkId a = link(10 * kGBps);
  const LinkId c = link(100 * kGBps);
  const FlowId f1 = start(1'000'000'000, {a, c});
  sim.run_until(Time::us(1));
  const FlowId f2 = start(1'000'000'000, {a});
  const FlowId f3 = start(1'000'000'000, {c});
  sim.run_until(Time::us(2));
  EXPECT_DOUBLE_EQ(net.current_rate(f1).value(), 5 * kGBps);
  EXPECT_DOUBLE_EQ(net.current_rate(f2).value(), 5 * kGBps);
  EXPECT_DOUBLE_EQ(net.current_rate(f3).value(), 95 * kGBps);
  sim.run();
}

TEST_F(FlowNetworkTest, ABoundaryLinkThatADepartureLeavesWithSpareCapacityIsBoundedNotSummed) {
  // As above with Y at 10 GB/s: a and b share X (2 GB/s) at 1 GB/s each, c has 5 (Z), Y carries
  // 6 of 10. a leaves at 1 ms: Y is a boundary link of the re-solve, its outside load bounded by
  // its load less b's (6 - 1 = 5 GB/s, c's exactly) instead of read from c; b gets 2 (X) and Y 7
  // of 10, far from full, so the bound stands: no refusal, no expansion, and the same rates and
  // link loads as the exact sum gives.
  const LinkId x = link(2 * kGBps), y = link(10 * kGBps), z = link(5 * kGBps);
  start(1'000'000, {x});
  const FlowId b = start(1'000'000'000, {x, y});
  const FlowId c = start(1'000'000'000, {y, z});
  sim.run_until(Time::us(500));
  const std::uint64_t expansions = net.boundary_expansions();
  const std::uint64_t estimates = net.boundary_estimates();
  const std::uint64_t refused = net.boundary_estimates_refused();
  sim.run_until(Time::ms(1) + Time::us(1));
  EXPECT_DOUBLE_EQ(net.current_rate(b).value(), 2 * kGBps);
  EXPECT_DOUBLE_EQ(net.current_rate(c).value(), 5 * kGBps);
  EXPECT_DOUBLE_EQ(net.load(y).value(), 7 * kGBps);
  EXPECT_DOUBLE_EQ(net.load(x).value(), 2 * kGBps);
  EXPECT_EQ(net.boundary_estimates(), estimates + 1);
  EXPECT_EQ(net.boundary_estimates_refused(), refused);
  EXPECT_EQ(net.boundary_expansions(), expansions);
  net.check_invariants();
  sim.run();
  EXPECT_EQ(at(b), Time::us(500'500));
  EXPECT_NEAR(at(c).seconds(), 1e9 / 5e9, 1e-12);
}

TEST_F(FlowNetworkTest, SamplesOnlyTheChosenLinks) {
  // One 1 MB flow over links 0 and 1 (1 GB/s each): only link 1 was chosen, so only it has the
  // two samples (full from 0, idle from 1 ms); link 0's statistics are kept all the same.
  FlowNetwork net2(sim,
                   FlowNetworkOptions{.record_utilization_samples = true, .sampled_links = {1}});
  const LinkId a = net2.add_link(BytesPerSecond(kGBps), Time::zero());
  const LinkId b = net2.add_link(BytesPerSecond(kGBps), Time::zero());
  net2.start_flow(0, 1, Bytes(1'000'000), std::vector<LinkId>{a, b}, [](const FlowCompletion&) {});
  sim.run();
  EXPECT_TRUE(net2.utilization_samples(a).empty());
  ASSERT_EQ(net2.utilization_samples(b).size(), 2u);
  EXPECT_EQ(net2.utilization_samples(b)[1].time, Time::ms(1));
  EXPECT_NEAR(net2.link_statistics(a).bytes_carried, 1e6, 1e-6);
}

TEST_F(FlowNetworkTest, LinkIdsAreDenseInInsertionOrder) {
  EXPECT_EQ(link(kGBps).value(), 0u);
  EXPECT_EQ(link(kGBps).value(), 1u);
  EXPECT_EQ(link(kGBps).value(), 2u);
  EXPECT_EQ(net.link_count(), 3u);
}

TEST_F(FlowNetworkTest, BadArgumentsAreRejected) {
  EXPECT_THROW(net.add_link(BytesPerSecond(0.0), Time::zero()), std::invalid_argument);
  EXPECT_THROW(net.add_link(BytesPerSecond(1.0), Time::ps(-1)), std::invalid_argument);
  const LinkId l = link(kGBps);
  EXPECT_THROW(start(10, {LinkId{7}}), std::invalid_argument);
  const std::vector<LinkId> path{l};
  const std::vector<WeightedPath> zero_weight{{path, 0.0}};
  EXPECT_THROW(net.start_flow(0, 1, Bytes(1), zero_weight, FlowCallback{}), std::invalid_argument);
  EXPECT_EQ(net.active_flows(), 0u);
}

TEST_F(FlowNetworkTest, IdenticalFlowsStartedAtDifferentTimesShareAClassButFinishApart) {
  // Same path, so one class. A: 2 MB at 0; B: 1 MB at 1 ms. 0-1 ms: A alone at 1 GB/s moves 1 MB.
  // From 1 ms both at 0.5 GB/s with 1 MB each left: both finish at 3 ms. C: 1 MB at 3 ms alone:
  // 4 ms.
  const LinkId l = link(kGBps);
  const FlowId a = start(2'000'000, {l});
  FlowId b;
  FlowId c;
  sim.schedule_at(Time::ms(1), [&] { b = start(1'000'000, {l}); });
  sim.schedule_at(Time::ms(3), [&] { c = start(1'000'000, {l}); });
  sim.run();
  EXPECT_EQ(at(a), Time::ms(3));
  EXPECT_EQ(at(b), Time::ms(3));
  EXPECT_EQ(at(c), Time::ms(4));
}

TEST_F(FlowNetworkTest, DepartureKeepsTheRatesBelowItsOwnWithoutResolvingThem) {
  // Link 0 of 10 GB/s carries a, b (one class) and d; link 1 of 30 GB/s carries d and c. Max-min:
  // 10/3 GB/s for a, b and d (link 0 saturates first), c gets 30 - 10/3 = 80/3 GB/s and drains
  // 1 MB in 1e6 / (80/3 * 1e9) s = 37.5 us. When c leaves, every other class has a lower rate
  // (10/3 < 80/3): by the progressive-filling order they keep their rates, and no class is
  // re-solved (a full re-solve would solve 2). a, b and d drain 10 MB at 10/3 GB/s: 3 ms.
  const LinkId l0 = link(10 * kGBps);
  const LinkId l1 = link(30 * kGBps);
  const FlowId a = start(10'000'000, {l0});
  const FlowId b = start(10'000'000, {l0});
  const FlowId d = start(10'000'000, {l0, l1});
  const FlowId c = start(1'000'000, {l1});
  sim.run_until(Time::ps(1));
  EXPECT_EQ(net.classes_solved(), 3u) << "classes {a, b}, {d} and {c}";
  EXPECT_DOUBLE_EQ(net.current_rate(c).value(), 80.0 / 3 * kGBps);
  sim.run_until(Time::us(38));
  EXPECT_EQ(at(c), Time::ns(37'500));
  EXPECT_EQ(net.solves(), 2u);
  EXPECT_EQ(net.classes_solved(), 3u) << "the departure re-solved nothing";
  EXPECT_DOUBLE_EQ(net.current_rate(d).value(), 10.0 / 3 * kGBps);
  EXPECT_DOUBLE_EQ(net.load(l1).value(), 10.0 / 3 * kGBps);
  sim.run();
  EXPECT_EQ(at(a), Time::ms(3));
  EXPECT_EQ(at(b), Time::ms(3));
  EXPECT_EQ(at(d), Time::ms(3));
}

TEST_F(FlowNetworkTest, ArrivalKeepsTheRatesBelowItsEqualShareWithoutResolvingThem) {
  // Link 0 of 1 GB/s carries class p (two flows, path {0, 1}); link 1 of 100 GB/s carries p and q.
  // Max-min: p's flows 0.5 GB/s each (link 0 full), q 99 GB/s (link 1 full). At 1 us r arrives on
  // link 1: every new rate on it is at least 100 / 4 = 25 GB/s (4 flows there), so p, at 0.5,
  // keeps its rate (a full re-solve would solve it again): the arrival's solve covers q's class
  // only (r has q's path, so it joins it), 49.5 GB/s each. q (198 kB) has 99 kB left at 1 us and r
  // brings 99 kB: both finish 2 us later.
  const LinkId l0 = link(kGBps);
  const LinkId l1 = link(100 * kGBps);
  const FlowId p1 = start(10'000'000, {l0, l1});
  const FlowId p2 = start(10'000'000, {l0, l1});
  const FlowId q = start(198'000, {l1});
  FlowId r;
  sim.run_until(Time::ps(1));
  EXPECT_EQ(net.classes_solved(), 2u) << "classes {p1, p2} and {q}";
  EXPECT_DOUBLE_EQ(net.current_rate(q).value(), 99 * kGBps);
  sim.schedule_at(Time::us(1), [&] { r = start(99'000, {l1}); });
  sim.run_until(Time::us(1) + Time::ps(1));
  EXPECT_EQ(net.solves(), 2u);
  EXPECT_EQ(net.classes_solved(), 3u) << "the arrival solved {q, r}, not p";
  EXPECT_DOUBLE_EQ(net.current_rate(p1).value(), 0.5 * kGBps);
  EXPECT_DOUBLE_EQ(net.current_rate(q).value(), 49.5 * kGBps);
  EXPECT_DOUBLE_EQ(net.current_rate(r).value(), 49.5 * kGBps);
  sim.run_until(Time::us(4));
  EXPECT_EQ(at(q), Time::us(3));
  EXPECT_EQ(at(r), Time::us(3));
  EXPECT_DOUBLE_EQ(net.current_rate(p2).value(), 0.5 * kGBps);
  sim.run();
  EXPECT_EQ(at(p1), Time::ms(20));  // 10 MB at 0.5 GB/s throughout
  EXPECT_EQ(at(p2), Time::ms(20));
}

}  // namespace
}  // namespace stepsim::engine
