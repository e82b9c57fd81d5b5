#include "sim/engine/max_min_solver.hpp"

#include <gtest/gtest.h>
#include <algorithm>
#include <limits>
#include <random>
#include <vector>

#include "tests/engine/brute_force_max_min.hpp"

namespace stepsim::engine {
namespace {

// Solves a problem given as one path per class, each class with `flows` flows.
std::vector<double> solve(const std::vector<double>& capacity,
                          const std::vector<std::vector<std::uint32_t>>& paths,
                          const std::vector<std::uint32_t>& flows) {
  std::vector<std::uint32_t> offsets{0};
  std::vector<std::uint32_t> links;
  for (const auto& p : paths) {
    links.insert(links.end(), p.begin(), p.end());
    offsets.push_back(static_cast<std::uint32_t>(links.size()));
  }
  std::vector<double> rate(paths.size());
  MaxMinSolver solver;
  solver.solve(capacity, flows, offsets, links, rate);
  return rate;
}

TEST(MaxMinSolver, IdenticalFlowsSplitOneLinkEqually) {
  // One 10 GB/s link, one class of 4 flows: 10/4 = 2.5 GB/s each.
  const auto rate = solve({10e9}, {{0}}, {4});
  EXPECT_DOUBLE_EQ(rate[0], 2.5e9);
}

TEST(MaxMinSolver, ParkingLot) {
  // The parking lot (Bertsekas & Gallager, Data Networks, example in section 6.5.2): three links of
  // 1 GB/s in a row, a long flow over all three and one short flow per link. Every link has two
  // flows, so every flow gets 0.5 GB/s.
  const auto rate = solve({1e9, 1e9, 1e9}, {{0, 1, 2}, {0}, {1}, {2}}, {1, 1, 1, 1});
  for (const double r : rate)
    EXPECT_DOUBLE_EQ(r, 0.5e9);
}

TEST(MaxMinSolver, ParkingLotWithMoreShortFlowsOnOneLink) {
  // Link 0 carries the long flow and 3 short ones: share 1/4. The long flow is frozen at 0.25 GB/s;
  // links 1 and 2 then give their single short flow 1 - 0.25 = 0.75 GB/s.
  const auto rate = solve({1e9, 1e9, 1e9}, {{0, 1, 2}, {0}, {1}, {2}}, {1, 3, 1, 1});
  EXPECT_DOUBLE_EQ(rate[0], 0.25e9);
  EXPECT_DOUBLE_EQ(rate[1], 0.25e9);
  EXPECT_DOUBLE_EQ(rate[2], 0.75e9);
  EXPECT_DOUBLE_EQ(rate[3], 0.75e9);
}

TEST(MaxMinSolver, LinksOfDifferentCapacities) {
  // Links (GB/s): A = 1 carries f1 f2 f3; B = 10 carries f3 f4; C = 2 carries f4 f5.
  // Fair shares: A 1/3, B 5, C 1. A saturates first: f1 = f2 = f3 = 1/3. Then B has 10 - 1/3 for
  // f4 alone, C has 2 for f4 and f5: C saturates at 1, so f4 = f5 = 1 GB/s; B stays unsaturated.
  const auto rate = solve({1e9, 10e9, 2e9}, {{0}, {0}, {0, 1}, {1, 2}, {2}}, {1, 1, 1, 1, 1});
  EXPECT_DOUBLE_EQ(rate[0], 1e9 / 3);
  EXPECT_DOUBLE_EQ(rate[1], 1e9 / 3);
  EXPECT_DOUBLE_EQ(rate[2], 1e9 / 3);
  EXPECT_DOUBLE_EQ(rate[3], 1e9);
  EXPECT_DOUBLE_EQ(rate[4], 1e9);
}

TEST(MaxMinSolver, LinkListedTwiceCountsTwice) {
  // A path that crosses link 0 twice uses 2r of it: with one such flow alone, r = C / 2.
  const auto rate = solve({4e9}, {{0, 0}}, {1});
  EXPECT_DOUBLE_EQ(rate[0], 2e9);
}

TEST(MaxMinSolver, LinksWithoutLimitBindNothing) {
  // Link 0 of 1 GB/s carries classes 0 and 1; links 1 and 2 have no limit (infinite capacity, as
  // the incremental solve gives boundary links it only bounds). Classes 0 and 1 share link 0:
  // 0.5 GB/s each, whatever else they cross. Classes 2 and 3 cross only unlimited links: no
  // finite rate limits them, so their rate is infinite.
  const double inf = std::numeric_limits<double>::infinity();
  const auto rate = solve({1e9, inf, inf}, {{0}, {0, 1}, {1, 2}, {2}}, {1, 1, 2, 1});
  EXPECT_DOUBLE_EQ(rate[0], 0.5e9);
  EXPECT_DOUBLE_EQ(rate[1], 0.5e9);
  EXPECT_EQ(rate[2], inf);
  EXPECT_EQ(rate[3], inf);
}

TEST(MaxMinSolver, UnlimitedLinksChangeNoRateBitForBit) {
  // 500 random instances solved twice: once as they are, once with extra unlimited links added to
  // random classes' paths (shared by several classes, so they would sit in the link heap). The
  // rates must be the same bits: a link that cannot fill never takes part in the filling.
  std::mt19937_64 rng(20261202);
  MaxMinSolver solver;
  const double inf = std::numeric_limits<double>::infinity();
  for (int instance = 0; instance < 500; ++instance) {
    const int links = std::uniform_int_distribution<int>(1, 12)(rng);
    const int unlimited = std::uniform_int_distribution<int>(1, 4)(rng);
    const int classes = std::uniform_int_distribution<int>(1, 30)(rng);
    std::vector<double> capacity(links);
    for (double& c : capacity)
      c = std::uniform_real_distribution<double>(1e9, 100e9)(rng);
    std::vector<double> extended = capacity;
    extended.insert(extended.end(), static_cast<std::size_t>(unlimited), inf);
    std::vector<std::uint32_t> offsets{0}, extended_offsets{0};
    std::vector<std::uint32_t> path_links, extended_links;
    std::vector<std::uint32_t> flows(classes);
    for (int c = 0; c < classes; ++c) {
      const int len = std::uniform_int_distribution<int>(1, std::min(4, links))(rng);
      std::vector<std::uint32_t> path;
      while (static_cast<int>(path.size()) < len) {
        const auto l = std::uniform_int_distribution<std::uint32_t>(0, links - 1)(rng);
        if (std::find(path.begin(), path.end(), l) == path.end()) path.push_back(l);
      }
      path_links.insert(path_links.end(), path.begin(), path.end());
      offsets.push_back(static_cast<std::uint32_t>(path_links.size()));
      // Unlimited links inserted at random places of the path.
      for (int u = 0; u < unlimited; ++u) {
        if (std::uniform_int_distribution<int>(0, 1)(rng) == 0) continue;
        const auto at = std::uniform_int_distribution<std::size_t>(0, path.size())(rng);
        path.insert(path.begin() + static_cast<std::ptrdiff_t>(at),
                    static_cast<std::uint32_t>(links + u));
      }
      extended_links.insert(extended_links.end(), path.begin(), path.end());
      extended_offsets.push_back(static_cast<std::uint32_t>(extended_links.size()));
      flows[c] = std::uniform_int_distribution<std::uint32_t>(1, 4)(rng);
    }
    std::vector<double> rate(classes), extended_rate(classes);
    solver.solve(capacity, flows, offsets, path_links, rate);
    solver.solve(extended, flows, extended_offsets, extended_links, extended_rate);
    for (int c = 0; c < classes; ++c)
      ASSERT_EQ(rate[c], extended_rate[c]) << "instance " << instance << " class " << c;
  }
}

TEST(MaxMinSolver, MatchesBruteForceOnRandomInstances) {
  // 500 random instances: random capacities, classes of 1-4 flows on random paths of 1-4 links;
  // the class rates must equal the per-flow brute-force water-filling to a relative 1e-9.
  std::mt19937_64 rng(20240601);
  MaxMinSolver solver;
  for (int instance = 0; instance < 500; ++instance) {
    const int links = std::uniform_int_distribution<int>(1, 12)(rng);
    const int classes = std::uniform_int_distribution<int>(1, 30)(rng);
    std::vector<double> capacity(links);
    for (double& c : capacity)
      c = std::uniform_real_distribution<double>(1e9, 100e9)(rng);
    std::vector<std::uint32_t> offsets{0};
    std::vector<std::uint32_t> path_links;
    std::vector<std::uint32_t> flows(classes);
    std::vector<std::vector<int>> flow_paths;
    for (int c = 0; c < classes; ++c) {
      const int len = std::uniform_int_distribution<int>(1, std::min(4, links))(rng);
      std::vector<int> path;
      while (static_cast<int>(path.size()) < len) {
        const int l = std::uniform_int_distribution<int>(0, links - 1)(rng);
        if (std::find(path.begin(), path.end(), l) == path.end()) path.push_back(l);
      }
      for (const int l : path)
        path_links.push_back(static_cast<std::uint32_t>(l));
      offsets.push_back(static_cast<std::uint32_t>(path_links.size()));
      flows[c] = std::uniform_int_distribution<std::uint32_t>(1, 4)(rng);
      for (std::uint32_t k = 0; k < flows[c]; ++k)
        flow_paths.push_back(path);
    }
    std::vector<double> rate(classes);
    solver.solve(capacity, flows, offsets, path_links, rate);
    const std::vector<double> expected = testing::brute_force_max_min(capacity, flow_paths);
    std::size_t f = 0;
    for (int c = 0; c < classes; ++c) {
      for (std::uint32_t k = 0; k < flows[c]; ++k, ++f) {
        ASSERT_NEAR(rate[c], expected[f], 1e-9 * expected[f]) << "instance " << instance;
      }
    }
  }
}

TEST(MaxMinSolver, SprayedFlowIsBoundByItsMostLoadedShare) {
  // One flow sprayed 1/2, 1/4, 1/4 over three 1 GB/s links: at rate r it loads them r/2, r/4, r/4,
  // so the first link caps it at 2 GB/s. A second, plain flow on link 1: link 1 then holds
  // r/4 + r2; water-filling raises both to level x: link 0 saturates at x = 2 GB/s, link 1 at
  // 1.25 x = 1 GB/s, i.e. x = 0.8 GB/s first, freezing both at 0.8 GB/s.
  MaxMinSolver solver;
  const std::vector<double> capacity{1e9, 1e9, 1e9};
  const std::vector<std::uint32_t> flows{1, 1};
  const std::vector<std::uint32_t> offsets{0, 3, 4};
  const std::vector<std::uint32_t> links{0, 1, 2, 1};
  const std::vector<double> weights{0.5, 0.25, 0.25, 1.0};
  std::vector<double> rate(2);
  solver.solve(capacity, flows, offsets, links, weights, rate);
  EXPECT_DOUBLE_EQ(rate[0], 0.8e9);
  EXPECT_DOUBLE_EQ(rate[1], 0.8e9);
  // Alone, the sprayed flow reaches 1 / (1/2) = 2 GB/s.
  std::vector<double> alone(1);
  solver.solve(capacity, std::vector<std::uint32_t>{1}, std::vector<std::uint32_t>{0, 3},
               std::vector<std::uint32_t>{0, 1, 2}, std::vector<double>{0.5, 0.25, 0.25}, alone);
  EXPECT_DOUBLE_EQ(alone[0], 2e9);
}

TEST(MaxMinSolver, WeightedMatchesBruteForceOnRandomInstances) {
  // 500 random instances with random weights in (0, 1] (sprayed flows), classes of 1-3 flows;
  // rates equal the per-flow weighted water-filling to a relative 1e-9. Unit weights given
  // explicitly give the same bits as no weights.
  std::mt19937_64 rng(20261201);
  MaxMinSolver solver;
  for (int instance = 0; instance < 500; ++instance) {
    const int links = std::uniform_int_distribution<int>(1, 10)(rng);
    const int classes = std::uniform_int_distribution<int>(1, 20)(rng);
    std::vector<double> capacity(links);
    for (double& c : capacity)
      c = std::uniform_real_distribution<double>(1e9, 100e9)(rng);
    std::vector<std::uint32_t> offsets{0};
    std::vector<std::uint32_t> path_links;
    std::vector<double> weights;
    std::vector<std::uint32_t> flows(classes);
    std::vector<std::vector<int>> flow_paths;
    std::vector<std::vector<double>> flow_weights;
    for (int c = 0; c < classes; ++c) {
      const int len = std::uniform_int_distribution<int>(1, std::min(5, links))(rng);
      std::vector<int> path;
      std::vector<double> w;
      while (static_cast<int>(path.size()) < len) {
        const int l = std::uniform_int_distribution<int>(0, links - 1)(rng);
        if (std::find(path.begin(), path.end(), l) != path.end()) continue;
        path.push_back(l);
        w.push_back(std::uniform_real_distribution<double>(0.05, 1.0)(rng));
      }
      for (std::size_t i = 0; i < path.size(); ++i) {
        path_links.push_back(static_cast<std::uint32_t>(path[i]));
        weights.push_back(w[i]);
      }
      offsets.push_back(static_cast<std::uint32_t>(path_links.size()));
      flows[c] = std::uniform_int_distribution<std::uint32_t>(1, 3)(rng);
      for (std::uint32_t k = 0; k < flows[c]; ++k) {
        flow_paths.push_back(path);
        flow_weights.push_back(w);
      }
    }
    std::vector<double> rate(classes);
    solver.solve(capacity, flows, offsets, path_links, weights, rate);
    const std::vector<double> expected =
        testing::brute_force_weighted_max_min(capacity, flow_paths, flow_weights);
    std::size_t f = 0;
    for (int c = 0; c < classes; ++c) {
      for (std::uint32_t k = 0; k < flows[c]; ++k, ++f) {
        ASSERT_NEAR(rate[c], expected[f], 1e-9 * expected[f]) << "instance " << instance;
      }
    }
    std::vector<double> unit(classes), plain(classes);
    solver.solve(capacity, flows, offsets, path_links, std::vector<double>(path_links.size(), 1.0),
                 unit);
    solver.solve(capacity, flows, offsets, path_links, plain);
    ASSERT_EQ(unit, plain) << "instance " << instance;
  }
}

}  // namespace
}  // namespace stepsim::engine
