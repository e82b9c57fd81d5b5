// LevelRates (the issue 16 prototype: max-min rates held per bottleneck level) against the flow
// network's exact solve on random instances, closed forms, and MaxMinSolver's bottleneck output.
#include "sim/bench/level_rates.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <vector>

#include "sim/engine/flow_network.hpp"
#include "sim/engine/max_min_solver.hpp"

namespace stepsim::engine {
namespace {

using bench::LevelRates;

struct Instance {
  std::vector<double> capacity;
  std::vector<std::int64_t> latency_ps;
  std::vector<std::vector<std::uint32_t>> paths;  // per flow
  std::vector<std::int64_t> bytes;                // per flow
};

// Flows that all start at time 0 on random simple paths; some share a path (classes of several
// flows), some are empty.
Instance make_instance(std::mt19937_64& rng) {
  Instance in;
  const int links = std::uniform_int_distribution<int>(1, 12)(rng);
  for (int l = 0; l < links; ++l) {
    in.capacity.push_back(std::uniform_real_distribution<double>(1e9, 50e9)(rng));
    in.latency_ps.push_back(std::uniform_int_distribution<std::int64_t>(0, 2'000'000)(rng));
  }
  std::vector<std::vector<std::uint32_t>> pool;
  const int distinct = std::uniform_int_distribution<int>(1, 30)(rng);
  for (int p = 0; p < distinct; ++p) {
    const int len = std::uniform_int_distribution<int>(1, std::min(4, links))(rng);
    std::vector<std::uint32_t> path;
    while (static_cast<int>(path.size()) < len) {
      const auto l = std::uniform_int_distribution<std::uint32_t>(0, links - 1)(rng);
      if (std::find(path.begin(), path.end(), l) == path.end()) path.push_back(l);
    }
    pool.push_back(path);
  }
  const int flows = std::uniform_int_distribution<int>(1, 60)(rng);
  // Sizes from a few values sometimes, so that flows finish in one instant too.
  const bool few_sizes = std::uniform_int_distribution<int>(0, 2)(rng) == 0;
  for (int f = 0; f < flows; ++f) {
    in.paths.push_back(pool[std::uniform_int_distribution<std::size_t>(0, pool.size() - 1)(rng)]);
    std::int64_t b = std::uniform_int_distribution<std::int64_t>(1, 4'000'000)(rng);
    if (few_sizes) b = 1'000'000 * std::uniform_int_distribution<std::int64_t>(1, 3)(rng);
    if (std::uniform_int_distribution<int>(0, 9)(rng) == 0) b = 0;
    in.bytes.push_back(b);
  }
  return in;
}

std::vector<std::int64_t> run_flow_network(const Instance& in) {
  Simulator sim;
  FlowNetwork net(sim);
  for (std::size_t l = 0; l < in.capacity.size(); ++l)
    net.add_link(BytesPerSecond(in.capacity[l]), Time::ps(in.latency_ps[l]));
  std::vector<std::int64_t> finish(in.paths.size(), -1);
  for (std::size_t f = 0; f < in.paths.size(); ++f) {
    std::vector<LinkId> path;
    for (const std::uint32_t l : in.paths[f])
      path.push_back(LinkId{l});
    net.start_flow(0, 1, Bytes(in.bytes[f]), path, [&finish, f](const FlowCompletion& done) {
      finish[f] = done.finish.picoseconds();
    });
  }
  sim.run();
  return finish;
}

std::vector<std::int64_t> run_levels(const Instance& in, LevelRates::Counters* counters = nullptr) {
  LevelRates net;
  for (std::size_t l = 0; l < in.capacity.size(); ++l)
    net.add_link(in.capacity[l], in.latency_ps[l]);
  for (std::size_t f = 0; f < in.paths.size(); ++f)
    net.add_flow(in.paths[f], static_cast<double>(in.bytes[f]));
  net.run();
  if (counters != nullptr) *counters = net.counters();
  return {net.finish_ps().begin(), net.finish_ps().end()};
}

TEST(LevelRates, MatchesFlowNetworkOn1000RandomInstances) {
  // Same completion times as the flow network's exact incremental solve. The two sum the same
  // terms in other orders (a group's clock against a class's drained bytes, loads taken off and
  // put back), so a drain end may round to the neighbouring picosecond: the bound is 1 ps.
  std::mt19937_64 rng(16);
  int differing = 0;
  std::uint64_t moves = 0, scans = 0, instants = 0;
  for (int i = 0; i < 1000; ++i) {
    const Instance in = make_instance(rng);
    const std::vector<std::int64_t> exact = run_flow_network(in);
    LevelRates::Counters counters;
    const std::vector<std::int64_t> levels = run_levels(in, &counters);
    moves += counters.class_moves;
    scans += counters.link_scans;
    instants += counters.instants;
    ASSERT_EQ(exact.size(), levels.size());
    for (std::size_t f = 0; f < exact.size(); ++f) {
      ASSERT_GE(exact[f], 0) << "instance " << i << " flow " << f;
      ASSERT_LE(std::llabs(exact[f] - levels[f]), 1) << "instance " << i << " flow " << f;
      if (exact[f] != levels[f]) ++differing;
    }
  }
  // The instances exercise what the levels do beyond the first solve: classes changing group
  // and links read for classes outside their old group.
  EXPECT_GT(moves, 1000u);
  EXPECT_GT(scans, 1000u);
  EXPECT_GT(instants, 5000u);
  RecordProperty("finish_times_one_ps_apart", differing);
}

TEST(LevelRates, EqualFlowsOnOneLinkFinishInOneInstant) {
  // n flows of b bytes on one link of C bytes/s: all finish at n b / C plus the latency.
  LevelRates net;
  const std::uint32_t link = net.add_link(1e9, 1'000'000);
  const std::vector<std::uint32_t> path{link};
  for (int f = 0; f < 8; ++f)
    net.add_flow(path, 1e6);
  net.run();
  for (const std::int64_t finish : net.finish_ps())
    EXPECT_EQ(finish, 8'000'000'000 + 1'000'000);  // 8 MB at 1 GB/s = 8 ms, + 1 us
  EXPECT_EQ(net.counters().instants, 1u);
  EXPECT_EQ(net.counters().level_updates, 0u);
}

TEST(LevelRates, EqualAllToAllFinishesInOneInstant) {
  // Every host sends b to every other over its own up and down links (a non-blocking switch): each
  // up link carries n - 1 flows at C / (n - 1), all finish at (n - 1) b / C.
  LevelRates net;
  constexpr int kHosts = 16;
  std::vector<std::uint32_t> up, down;
  for (int h = 0; h < kHosts; ++h)
    up.push_back(net.add_link(50e9, 0));
  for (int h = 0; h < kHosts; ++h)
    down.push_back(net.add_link(50e9, 0));
  for (int s = 0; s < kHosts; ++s) {
    for (int d = 0; d < kHosts; ++d) {
      if (s != d) net.add_flow(std::vector<std::uint32_t>{up[s], down[d]}, 1e6);
    }
  }
  net.run();
  for (const std::int64_t finish : net.finish_ps())
    EXPECT_EQ(finish, 300'000'000);  // 15 MB at 50 GB/s = 300 us
  EXPECT_EQ(net.counters().instants, 1u);
}

TEST(LevelRates, ShorterFlowLeavesItsShareToTheLonger) {
  // Two flows on one link of C: the short one (b1) ends at 2 b1 / C, the long one (b2) at
  // (b1 + b2) / C; a third flow on a link of its own is not coupled to them.
  LevelRates net;
  const std::uint32_t shared = net.add_link(1e9, 0);
  const std::uint32_t own = net.add_link(2e9, 0);
  net.add_flow(std::vector<std::uint32_t>{shared}, 1e6);
  net.add_flow(std::vector<std::uint32_t>{shared}, 3e6);
  net.add_flow(std::vector<std::uint32_t>{own}, 5e6);
  net.run();
  EXPECT_EQ(net.finish_ps()[0], 2'000'000'000);
  EXPECT_EQ(net.finish_ps()[1], 4'000'000'000);
  EXPECT_EQ(net.finish_ps()[2], 2'500'000'000);
}

TEST(LevelRates, BottleneckMovesWhenItsLevelRises) {
  // Parking lot: flow 0 crosses links A (C = 3) and B (C = 4); flows 1, 2 cross A, flow 3 crosses
  // B (GB/s). Max-min: A saturates first at 1 GB/s (flows 0, 1, 2), flow 3 takes B's remaining
  // 3 GB/s. Flows 1 and 2 (1 MB) leave at 1 ms; flow 0 then shares B with flow 3 at 2 GB/s each
  // (its bottleneck moves from A to B): flow 0 (3 MB) has 2 MB left, done at 2 ms; flow 3 (6 MB)
  // has 3 MB left at 1 ms, 1 MB left at 2 ms, then 4 GB/s alone: done at 2.25 ms.
  LevelRates net;
  const std::uint32_t a = net.add_link(3e9, 0);
  const std::uint32_t b = net.add_link(4e9, 0);
  net.add_flow(std::vector<std::uint32_t>{a, b}, 3e6);
  net.add_flow(std::vector<std::uint32_t>{a}, 1e6);
  net.add_flow(std::vector<std::uint32_t>{a}, 1e6);
  net.add_flow(std::vector<std::uint32_t>{b}, 6e6);
  net.run();
  EXPECT_EQ(net.finish_ps()[1], 1'000'000'000);
  EXPECT_EQ(net.finish_ps()[2], 1'000'000'000);
  EXPECT_EQ(net.finish_ps()[0], 2'000'000'000);
  EXPECT_EQ(net.finish_ps()[3], 2'250'000'000);
  // The first solve places the three classes (flows 1 and 2 are one), then class 0 moves.
  EXPECT_EQ(net.counters().class_moves, 3u + 1u);
}

TEST(LevelRates, RejectsBadInput) {
  LevelRates net;
  EXPECT_THROW(net.add_link(0.0, 0), std::invalid_argument);
  const std::uint32_t l = net.add_link(1e9, 0);
  EXPECT_THROW(net.add_flow(std::vector<std::uint32_t>{l + 1}, 1.0), std::invalid_argument);
  EXPECT_THROW(net.add_flow(std::vector<std::uint32_t>{l, l}, 1.0), std::invalid_argument);
}

TEST(MaxMinSolverBottlenecks, SameRatesAndEachRateIsItsBottlenecksLevel) {
  // solve_with_bottlenecks gives solve()'s rates bit for bit; every class's bottleneck is on its
  // path and saturated, the class has the largest rate there, and the order is nondecreasing.
  std::mt19937_64 rng(17);
  MaxMinSolver solver;
  for (int i = 0; i < 1000; ++i) {
    const int links = std::uniform_int_distribution<int>(1, 10)(rng);
    const int classes = std::uniform_int_distribution<int>(1, 25)(rng);
    std::vector<double> capacity;
    for (int l = 0; l < links; ++l)
      capacity.push_back(std::uniform_real_distribution<double>(1.0, 100.0)(rng));
    std::vector<std::uint32_t> flows, offsets{0}, path;
    for (int c = 0; c < classes; ++c) {
      flows.push_back(std::uniform_int_distribution<std::uint32_t>(1, 4)(rng));
      const int len = std::uniform_int_distribution<int>(1, std::min(3, links))(rng);
      std::vector<std::uint32_t> p;
      while (static_cast<int>(p.size()) < len) {
        const auto l = std::uniform_int_distribution<std::uint32_t>(0, links - 1)(rng);
        if (std::find(p.begin(), p.end(), l) == p.end()) p.push_back(l);
      }
      path.insert(path.end(), p.begin(), p.end());
      offsets.push_back(static_cast<std::uint32_t>(path.size()));
    }
    std::vector<double> rate(classes), rate2(classes);
    std::vector<std::uint32_t> bottleneck(classes), order;
    solver.solve(capacity, flows, offsets, path, rate);
    solver.solve_with_bottlenecks(capacity, flows, offsets, path, rate2, bottleneck, order);
    std::vector<double> load(links, 0.0);
    for (int c = 0; c < classes; ++c) {
      for (std::uint32_t k = offsets[c]; k < offsets[c + 1]; ++k)
        load[path[k]] += flows[c] * rate2[c];
    }
    for (int c = 0; c < classes; ++c) {
      ASSERT_EQ(rate[c], rate2[c]);
      const std::uint32_t b = bottleneck[c];
      ASSERT_NE(std::find(path.begin() + offsets[c], path.begin() + offsets[c + 1], b),
                path.begin() + offsets[c + 1]);
      EXPECT_NEAR(load[b], capacity[b], 1e-9 * capacity[b]);
      for (int c2 = 0; c2 < classes; ++c2) {
        const bool crosses = std::find(path.begin() + offsets[c2], path.begin() + offsets[c2 + 1],
                                       b) != path.begin() + offsets[c2 + 1];
        if (crosses) {
          EXPECT_LE(rate2[c2], rate2[c] * (1 + 1e-12));
        }
      }
      ASSERT_NE(std::find(order.begin(), order.end(), b), order.end());
    }
    for (std::size_t j = 0; j + 1 < order.size(); ++j) {
      double level_j = -1, level_next = -1;
      for (int c = 0; c < classes; ++c) {
        if (bottleneck[c] == order[j]) level_j = rate2[c];
        if (bottleneck[c] == order[j + 1]) level_next = rate2[c];
      }
      ASSERT_GE(level_j, 0.0);
      EXPECT_LE(level_j, level_next * (1 + 1e-12));
    }
  }
}

}  // namespace
}  // namespace stepsim::engine
