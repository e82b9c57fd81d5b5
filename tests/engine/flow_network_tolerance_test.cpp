// FlowNetworkOptions::idle_tolerance: departures that leave every saturated link within the
// tolerance defer the re-solve. Hand-worked completion times, the bound against exact max-min on
// an all-to-all, and the invariants on random instances.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <random>
#include <stdexcept>
#include <vector>

#include "sim/engine/flow_network.hpp"

namespace stepsim::engine {
namespace {

constexpr double kGBps = 1e9;
constexpr std::int64_t kMB = 1'000'000;

struct Network {
  Simulator sim;
  FlowNetwork net;
  std::vector<Time> finish;
  explicit Network(double tolerance) : net(sim, FlowNetworkOptions{.idle_tolerance = tolerance}) {}
  std::size_t start(std::int64_t bytes, std::vector<LinkId> path) {
    const std::size_t index = finish.size();
    finish.push_back(Time::max());
    net.start_flow(0, 1, Bytes(bytes), path, [this, index](const FlowCompletion& done) {
      finish[index] = done.finish;
      net.check_invariants();
    });
    return index;
  }
};

TEST(FlowNetworkIdleTolerance, DepartureWithinTheToleranceKeepsTheOtherRates) {
  // Flows of 1, 2, 3 and 4 MB share one 1 GB/s link, each at 0.25 GB/s.
  //  - Exact max-min (processor sharing): 4, 7, 9, 10 ms.
  //  - Tolerance 30%: the 1 MB flow leaves at 4 ms and the link sits 25% idle, within the
  //    tolerance, so the others keep 0.25 GB/s; the 2 MB flow ends at 8 ms. 50% idle: re-solve, the
  //    3 and 4 MB flows (1 and 2 MB left) get 0.5 GB/s; the 3 MB flow ends at 10 ms, the last
  //    one (1 MB left) then runs alone at 1 GB/s until 11 ms.
  for (const double tolerance : {0.0, 0.3}) {
    Network run(tolerance);
    const LinkId l = run.net.add_link(BytesPerSecond(kGBps), Time::zero());
    for (int mb = 1; mb <= 4; ++mb)
      run.start(mb * kMB, {l});
    run.sim.run_until(Time::ms(5));
    EXPECT_DOUBLE_EQ(run.net.load(l).value(), tolerance > 0 ? 0.75 * kGBps : kGBps);
    run.sim.run();
    const std::vector<Time> expected =
        tolerance > 0 ? std::vector<Time>{Time::ms(4), Time::ms(8), Time::ms(10), Time::ms(11)}
                      : std::vector<Time>{Time::ms(4), Time::ms(7), Time::ms(9), Time::ms(10)};
    EXPECT_EQ(run.finish, expected) << "tolerance " << tolerance;
    EXPECT_EQ(run.net.deferred_departures(), tolerance > 0 ? 1u : 0u);
    // The deferred idle time shows in the statistics: 10 MB carried over 11 ms.
    const LinkStatistics s = run.net.link_statistics(l);
    EXPECT_NEAR(s.bytes_carried, 10.0 * kMB, 1e-3);
    EXPECT_NEAR(s.utilization, tolerance > 0 ? 10.0 / 11.0 : 1.0, 1e-9);
    run.net.check_invariants();
  }
}

TEST(FlowNetworkIdleTolerance, AnArrivalSolvesTheDeferredDeparturesToo) {
  // As above with tolerance 30%, and a 1 MB flow on a second 1 GB/s link arriving at 5 ms. Its
  // solve covers the departure deferred at 4 ms: from 5 ms the 2, 3 and 4 MB flows (0.75, 1.75,
  // 2.75 MB left) get 1/3 GB/s each. The 2 MB flow ends at 5 + 2.25 = 7.25 ms (a third idle:
  // re-solve, 0.5 GB/s each); the 3 MB flow (1 MB left) at 9.25 ms; the 4 MB flow (1 MB left) alone
  // at 10.25 ms. The second link's flow runs alone: 6 ms.
  Network run(0.3);
  const LinkId a = run.net.add_link(BytesPerSecond(kGBps), Time::zero());
  const LinkId b = run.net.add_link(BytesPerSecond(kGBps), Time::zero());
  for (int mb = 1; mb <= 4; ++mb)
    run.start(mb * kMB, {a});
  std::size_t late = 0;
  run.sim.schedule_at(Time::ms(5), [&] { late = run.start(kMB, {b}); });
  run.sim.run();
  EXPECT_EQ(late, 4u);
  const std::vector<Time> expected{Time::ms(4), Time::us(7250), Time::us(9250), Time::us(10250),
                                   Time::ms(6)};
  EXPECT_EQ(run.finish, expected);
}

TEST(FlowNetworkIdleTolerance, ToleranceOutsideZeroToOneIsRejected) {
  Simulator sim;
  EXPECT_THROW(FlowNetwork(sim, FlowNetworkOptions{.idle_tolerance = -0.1}), std::invalid_argument);
  EXPECT_THROW(FlowNetwork(sim, FlowNetworkOptions{.idle_tolerance = 1.0}), std::invalid_argument);
}

// All-to-all among 32 hosts of a two-level fat-tree (4 leaves x 8 hosts, 8 spines, 50 GB/s links
// of 1 us), sizes uniform in [1, 2] MiB, all starting at 0. Returns every flow's completion time.
std::vector<Time> all_to_all(double tolerance, std::uint64_t* solves) {
  constexpr int kLeaves = 4;
  constexpr int kHostsPerLeaf = 8;
  constexpr int kHosts = kLeaves * kHostsPerLeaf;
  Network run(tolerance);
  auto add = [&] { return run.net.add_link(BytesPerSecond(50 * kGBps), Time::us(1)); };
  std::vector<LinkId> up, down, leaf_up, spine_down;
  for (int h = 0; h < kHosts; ++h) {
    up.push_back(add());
    down.push_back(add());
  }
  for (int i = 0; i < kLeaves * kHostsPerLeaf; ++i) {
    leaf_up.push_back(add());     // leaf l to spine s: l * spines + s
    spine_down.push_back(add());  // spine s to leaf l: s * leaves + l
  }
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> mib(1.0, 2.0);
  for (int s = 0; s < kHosts; ++s) {
    for (int d = 0; d < kHosts; ++d) {
      if (s == d) continue;
      const int ls = s / kHostsPerLeaf;
      const int ld = d / kHostsPerLeaf;
      const int spine = d % kHostsPerLeaf;
      const auto bytes = static_cast<std::int64_t>(mib(rng) * 1024 * 1024);
      if (ls == ld) {
        run.start(bytes, {up[s], down[d]});
      } else {
        run.start(bytes, {up[s], leaf_up[ls * kHostsPerLeaf + spine],
                          spine_down[spine * kLeaves + ld], down[d]});
      }
    }
  }
  run.sim.run();
  run.net.check_invariants();
  EXPECT_EQ(run.net.active_flows(), 0u);
  *solves = run.net.solves();
  return run.finish;
}

TEST(FlowNetworkIdleTolerance, AllToAllStaysWithinTheToleranceOfExactMaxMin) {
  // The documented bound: with links kept at least (1 - tolerance) busy, completion times come out
  // later than exact max-min by about the tolerance or less. Measured here (and on the 128-host
  // benchmark, docs/performance.md) the error is far smaller; the assertions are the bound, and
  // that the tolerance really removed solves.
  std::uint64_t exact_solves = 0;
  const std::vector<Time> exact = all_to_all(0.0, &exact_solves);
  for (const double tolerance : {0.05, 0.1, 0.2}) {
    std::uint64_t solves = 0;
    const std::vector<Time> approx = all_to_all(tolerance, &solves);
    ASSERT_EQ(approx.size(), exact.size());
    const Time exact_end = *std::max_element(exact.begin(), exact.end());
    const Time approx_end = *std::max_element(approx.begin(), approx.end());
    EXPECT_LE(approx_end.seconds(), exact_end.seconds() * (1 + tolerance)) << tolerance;
    double total_error = 0;
    for (std::size_t f = 0; f < exact.size(); ++f) {
      const double e = (approx[f] - exact[f]).seconds() / exact[f].seconds();
      EXPECT_LE(std::abs(e), tolerance) << "flow " << f << " tolerance " << tolerance;
      total_error += std::abs(e);
    }
    EXPECT_LE(total_error / static_cast<double>(exact.size()), tolerance / 4) << tolerance;
    EXPECT_LT(solves, exact_solves) << tolerance;
  }
}

TEST(FlowNetworkIdleTolerance, RandomInstancesKeepTheInvariants) {
  // Random links, paths, sizes and start times (several flows per instant, flows started from
  // completion callbacks): the invariants hold at every completion (link loads within bandwidth
  // and equal to their flows' rates, bytes conserved) and every flow finishes.
  std::mt19937_64 rng(5);
  std::uint64_t deferred = 0;
  for (int instance = 0; instance < 300; ++instance) {
    Network run(std::uniform_real_distribution<double>(0.01, 0.5)(rng));
    const int links = std::uniform_int_distribution<int>(2, 10)(rng);
    std::vector<LinkId> all;
    for (int l = 0; l < links; ++l) {
      all.push_back(
          run.net.add_link(BytesPerSecond(std::uniform_real_distribution<double>(1e9, 50e9)(rng)),
                           Time::ns(std::uniform_int_distribution<int>(0, 2000)(rng))));
    }
    const int flows = std::uniform_int_distribution<int>(1, 60)(rng);
    for (int f = 0; f < flows; ++f) {
      std::vector<LinkId> path = all;
      std::shuffle(path.begin(), path.end(), rng);
      path.resize(
          std::uniform_int_distribution<std::size_t>(1, std::min<std::size_t>(4, links))(rng));
      const std::int64_t bytes = std::uniform_int_distribution<std::int64_t>(0, 4'000'000)(rng);
      const Time at = Time::us(20) * std::uniform_int_distribution<int>(0, 5)(rng);
      run.sim.schedule_at(at, [&run, bytes, path] { run.start(bytes, path); });
    }
    run.sim.run();
    run.net.check_invariants();
    EXPECT_EQ(run.net.active_flows(), 0u) << "instance " << instance;
    EXPECT_EQ(std::count(run.finish.begin(), run.finish.end(), Time::max()), 0)
        << "instance " << instance;
    deferred += run.net.deferred_departures();
  }
  EXPECT_GT(deferred, 0u) << "the instances must defer departures";
}

}  // namespace
}  // namespace stepsim::engine
