// TwinParts (sim/engine/twin_parts.hpp): a max-min problem solved once per distinct connected
// part gives the rates of the whole problem's solve, bit for bit.
#include "sim/engine/twin_parts.hpp"

#include <gtest/gtest.h>
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "sim/engine/max_min_solver.hpp"
#include "tests/engine/brute_force_max_min.hpp"

namespace stepsim::engine::detail {
namespace {

struct Problem {
  std::vector<double> capacity;
  std::vector<std::uint32_t> flows;
  std::vector<std::uint32_t> offsets{0};
  std::vector<std::uint32_t> links;
  std::vector<double> weights;  // empty or parallel to links
  std::vector<double> cap;      // empty or per class
};

// A random connected-or-not part: `links` links, `classes` classes on 1-3 of them.
Problem random_part(std::mt19937_64& rng, bool weighted, bool capped) {
  std::uniform_int_distribution<std::uint32_t> n_links(1, 6), n_classes(1, 8), flows(1, 5),
      length(1, 3);
  // Capacities from a few values so that shares tie, as in symmetric traffic; infinity is a
  // boundary link without a limit (an estimated one, incremental_max_min.hpp).
  const double capacities[] = {100e9, 160e9, 40.8e9, 50e9, std::numeric_limits<double>::infinity()};
  std::uniform_int_distribution<int> pick(0, 4);
  std::uniform_real_distribution<double> weight(0.25, 1.0), cap(5e9, 60e9);
  std::bernoulli_distribution uncapped(0.6);
  Problem p;
  const std::uint32_t nl = n_links(rng);
  for (std::uint32_t l = 0; l < nl; ++l)
    p.capacity.push_back(capacities[pick(rng)]);
  const std::uint32_t nc = n_classes(rng);
  for (std::uint32_t c = 0; c < nc; ++c) {
    p.flows.push_back(flows(rng));
    const std::uint32_t len = std::min(length(rng), nl);
    std::vector<std::uint32_t> path;
    while (path.size() < len) {
      const std::uint32_t l = std::uniform_int_distribution<std::uint32_t>(0, nl - 1)(rng);
      if (std::find(path.begin(), path.end(), l) == path.end()) path.push_back(l);
    }
    for (const std::uint32_t l : path) {
      p.links.push_back(l);
      if (weighted) p.weights.push_back(weight(rng));
    }
    p.offsets.push_back(static_cast<std::uint32_t>(p.links.size()));
    if (capped) p.cap.push_back(uncapped(rng) ? std::numeric_limits<double>::infinity() : cap(rng));
  }
  return p;
}

// `copies` copies of each part, interleaved: link l of copy k of a part is placed among the links
// of every other copy (l * copies + k), and so are the classes, so that each copy keeps the order
// of its links and classes while the copies' indices alternate.
Problem interleave(const std::vector<Problem>& parts, std::uint32_t copies, bool weighted,
                   bool capped) {
  Problem out;
  std::uint32_t link_base = 0;
  for (const Problem& part : parts) {
    const auto nl = static_cast<std::uint32_t>(part.capacity.size());
    for (std::uint32_t l = 0; l < nl; ++l)
      for (std::uint32_t k = 0; k < copies; ++k)
        out.capacity.push_back(part.capacity[l]);
    for (std::uint32_t c = 0; c < part.flows.size(); ++c) {
      for (std::uint32_t k = 0; k < copies; ++k) {
        out.flows.push_back(part.flows[c]);
        for (std::uint32_t i = part.offsets[c]; i < part.offsets[c + 1]; ++i) {
          out.links.push_back(link_base + part.links[i] * copies + k);
          if (weighted) out.weights.push_back(part.weights[i]);
        }
        out.offsets.push_back(static_cast<std::uint32_t>(out.links.size()));
        if (capped) out.cap.push_back(part.cap[c]);
      }
    }
    link_base += nl * copies;
  }
  return out;
}

std::vector<double> solve_whole(const Problem& p) {
  std::vector<double> rate(p.flows.size());
  MaxMinSolver solver;
  solver.solve(p.capacity, p.flows, p.offsets, p.links, p.weights, p.cap, rate);
  return rate;
}

// The parts of a problem, numbered by their smallest link (a flood fill over links and classes).
std::vector<std::uint32_t> number_parts(const Problem& p) {
  const std::size_t nl = p.capacity.size();
  std::vector<std::vector<std::uint32_t>> classes_on(nl);
  for (std::uint32_t c = 0; c < p.flows.size(); ++c)
    for (std::uint32_t k = p.offsets[c]; k < p.offsets[c + 1]; ++k)
      classes_on[p.links[k]].push_back(c);
  constexpr std::uint32_t kNone = 0xffffffffu;
  std::vector<std::uint32_t> part(nl, kNone);
  std::uint32_t parts = 0;
  for (std::uint32_t start = 0; start < nl; ++start) {
    if (part[start] != kNone) continue;
    std::vector<std::uint32_t> stack{start};
    part[start] = parts;
    while (!stack.empty()) {
      const std::uint32_t l = stack.back();
      stack.pop_back();
      for (const std::uint32_t c : classes_on[l]) {
        for (std::uint32_t k = p.offsets[c]; k < p.offsets[c + 1]; ++k) {
          if (part[p.links[k]] == kNone) {
            part[p.links[k]] = parts;
            stack.push_back(p.links[k]);
          }
        }
      }
    }
    ++parts;
  }
  return part;
}

// TwinParts with the parts as the flood fill above numbers them (the incremental solve's search
// numbers them the same way: by their smallest link).
std::vector<double> solve_twins(const Problem& p, TwinParts& twins) {
  const std::vector<std::uint32_t> part_of_link = number_parts(p);
  const std::uint32_t parts =
      part_of_link.empty() ? 0 : *std::max_element(part_of_link.begin(), part_of_link.end()) + 1;
  std::vector<double> rate(p.flows.size());
  MaxMinSolver solver;
  twins.solve(solver, {p.capacity, p.flows, p.offsets, p.links, p.weights, p.cap}, rate,
              part_of_link, parts);
  return rate;
}

// Instance i of the random suites: 1 to 4 random parts, weighted in a third of the instances,
// capped in a quarter, to be copied 2 to 6 times.
struct Instance {
  bool weighted = false;
  bool capped = false;
  std::vector<Problem> parts;
  std::uint32_t copies = 0;
};
Instance random_instance(std::mt19937_64& rng, int i) {
  Instance out;
  out.weighted = i % 3 == 1;
  out.capped = i % 4 == 2;
  for (int k = 0; k < 1 + i % 4; ++k)
    out.parts.push_back(random_part(rng, out.weighted, out.capped));
  out.copies = 2 + static_cast<std::uint32_t>(i % 5);
  return out;
}

TEST(TwinParts, CopiesOfAPartTakeTheWholeSolvesRatesBitForBit) {
  std::mt19937_64 rng(20261203);
  std::uint64_t twin_classes = 0;
  for (int instance = 0; instance < 1000; ++instance) {
    const auto [weighted, capped, parts, copies] = random_instance(rng, instance);
    Problem p = interleave(parts, copies, weighted, capped);
    // A part that is no one's twin: a copy of the first with one thing changed a little (a
    // capacity or a cap by one ulp, one more flow, a weight, a path's first link).
    if (instance % 2 == 0) {
      Problem odd = parts[0];
      switch (instance / 2 % 5) {
        case 0:
          odd.capacity[0] = std::nextafter(odd.capacity[0], 1e300);
          break;
        case 1:
          ++odd.flows[0];
          break;
        case 2:
          if (capped && std::isfinite(odd.cap[0])) {
            odd.cap[0] = std::nextafter(odd.cap[0], 1e300);
          } else {
            odd.capacity[0] = std::nextafter(odd.capacity[0], 0.0);
          }
          break;
        case 3:
          if (weighted) {
            odd.weights[0] = std::nextafter(odd.weights[0], 0.0);
          } else {
            ++odd.flows.back();
          }
          break;
        default:
          odd.links[0] = (odd.links[0] + 1) % static_cast<std::uint32_t>(odd.capacity.size());
      }
      const Problem extra = interleave({odd}, 1, weighted, capped);
      const auto base = static_cast<std::uint32_t>(p.capacity.size());
      p.capacity.insert(p.capacity.end(), extra.capacity.begin(), extra.capacity.end());
      for (std::uint32_t c = 0; c < extra.flows.size(); ++c) {
        p.flows.push_back(extra.flows[c]);
        for (std::uint32_t i = extra.offsets[c]; i < extra.offsets[c + 1]; ++i) {
          p.links.push_back(base + extra.links[i]);
          if (weighted) p.weights.push_back(extra.weights[i]);
        }
        p.offsets.push_back(static_cast<std::uint32_t>(p.links.size()));
        if (capped) p.cap.push_back(extra.cap[c]);
      }
    }
    TwinParts twins;
    const std::vector<double> whole = solve_whole(p);
    const std::vector<double> by_parts = solve_twins(p, twins);
    ASSERT_EQ(whole.size(), by_parts.size());
    for (std::size_t c = 0; c < whole.size(); ++c)
      ASSERT_EQ(std::bit_cast<std::uint64_t>(whole[c]), std::bit_cast<std::uint64_t>(by_parts[c]))
          << "instance " << instance << " class " << c << ": " << whole[c] << " vs " << by_parts[c];
    // And both are max-min fair (the brute-force oracle, unweighted, uncapped problems).
    const bool finite = std::all_of(p.capacity.begin(), p.capacity.end(),
                                    [](double c) { return std::isfinite(c); });
    if (!weighted && !capped && finite && instance % 10 == 0) {
      std::vector<std::vector<int>> flow_paths;
      std::vector<std::size_t> first_flow;
      for (std::size_t c = 0; c < p.flows.size(); ++c) {
        first_flow.push_back(flow_paths.size());
        for (std::uint32_t f = 0; f < p.flows[c]; ++f)
          flow_paths.emplace_back(p.links.begin() + p.offsets[c],
                                  p.links.begin() + p.offsets[c + 1]);
      }
      const std::vector<double> oracle =
          engine::testing::brute_force_max_min(p.capacity, flow_paths);
      for (std::size_t c = 0; c < whole.size(); ++c)
        EXPECT_NEAR(by_parts[c], oracle[first_flow[c]], 1e-9 * oracle[first_flow[c]]);
    }
    twin_classes += twins.twin_classes();
  }
  // Most classes were copied, not solved (the test would pass vacuously otherwise).
  EXPECT_GT(twin_classes, 20000u);
}

// The parts as runs (TwinParts::solve_ranges: the incremental search takes the parts one at a
// time): `copies` copies of each part one after another, the parts' copies taking turns (copy 0
// of every part, then copy 1, ...), and with `odd` >= 0 a part that is no one's twin at the end:
// the first with one thing changed (odd % 5: a capacity, a weight or a cap by one ulp, a flow
// more, a path's last link). Part p of the result begins at link_begin[p] and class_begin[p].
struct Runs {
  Problem problem;
  std::vector<std::uint32_t> link_begin;
  std::vector<std::uint32_t> class_begin;
};
Runs in_runs(const std::vector<Problem>& parts, std::uint32_t copies, bool weighted, bool capped,
             int odd) {
  Runs out;
  Problem& p = out.problem;
  auto append = [&](const Problem& part) {
    const auto base = static_cast<std::uint32_t>(p.capacity.size());
    out.link_begin.push_back(base);
    out.class_begin.push_back(static_cast<std::uint32_t>(p.flows.size()));
    p.capacity.insert(p.capacity.end(), part.capacity.begin(), part.capacity.end());
    for (std::uint32_t c = 0; c < part.flows.size(); ++c) {
      p.flows.push_back(part.flows[c]);
      for (std::uint32_t i = part.offsets[c]; i < part.offsets[c + 1]; ++i) {
        p.links.push_back(base + part.links[i]);
        if (weighted) p.weights.push_back(part.weights[i]);
      }
      p.offsets.push_back(static_cast<std::uint32_t>(p.links.size()));
      if (capped) p.cap.push_back(part.cap[c]);
    }
  };
  for (std::uint32_t k = 0; k < copies; ++k)
    for (const Problem& part : parts)
      append(part);
  if (odd >= 0) {
    Problem part = parts[0];
    switch (odd % 5) {
      case 1:
        if (weighted) {
          part.weights.back() = std::nextafter(part.weights.back(), 0.0);
          break;
        }
        [[fallthrough]];
      case 2:
        if (capped && std::isfinite(part.cap.back())) {
          part.cap.back() = std::nextafter(part.cap.back(), 1e300);
          break;
        }
        [[fallthrough]];
      case 0:
        part.capacity.back() = std::nextafter(part.capacity.back(), 0.0);
        break;
      case 3:
        ++part.flows.back();
        break;
      default:
        part.links.back() =
            (part.links.back() + 1) % static_cast<std::uint32_t>(part.capacity.size());
    }
    append(part);
  }
  return out;
}

TEST(TwinParts, PartsInRunsTakeTheWholeSolvesRatesBitForBit) {
  std::mt19937_64 rng(20261203);
  std::uint64_t twin_classes = 0;
  for (int instance = 0; instance < 1000; ++instance) {
    const auto [weighted, capped, parts, copies] = random_instance(rng, instance);
    const Runs runs =
        in_runs(parts, copies, weighted, capped, instance % 2 == 0 ? instance / 2 : -1);
    const Problem& p = runs.problem;
    const std::vector<double> whole = solve_whole(p);
    std::vector<double> by_runs(p.flows.size());
    MaxMinSolver solver;
    TwinParts twins;
    twins.solve_ranges(solver, {p.capacity, p.flows, p.offsets, p.links, p.weights, p.cap}, by_runs,
                       runs.link_begin, runs.class_begin);
    for (std::size_t c = 0; c < whole.size(); ++c)
      ASSERT_EQ(std::bit_cast<std::uint64_t>(whole[c]), std::bit_cast<std::uint64_t>(by_runs[c]))
          << "instance " << instance << " class " << c << ": " << whole[c] << " vs " << by_runs[c];
    // The loads summed per first part and copied to the twins' links: those of a sum over every
    // class in order, bit for bit.
    std::vector<double> load(p.capacity.size(), 0.0), summed(p.capacity.size(), 0.0);
    bool finite = true;
    const MaxMinProblem problem{p.capacity, p.flows, p.offsets, p.links, p.weights, p.cap};
    for (std::size_t c = 0; c < p.flows.size(); ++c)
      problem.add_class_load(c, whole[c], summed);
    if (twins.sum_loads(problem, by_runs, load, finite)) {
      for (std::size_t l = 0; l < load.size(); ++l)
        ASSERT_EQ(std::bit_cast<std::uint64_t>(load[l]), std::bit_cast<std::uint64_t>(summed[l]))
            << "instance " << instance << " link " << l;
    }
    // Every copy after the first is found a twin (a problem of 16 classes or more).
    std::uint64_t copied = 0;
    for (const Problem& part : parts)
      copied += (copies - 1) * part.flows.size();
    if (p.flows.size() >= 16) {
      ASSERT_GE(twins.twin_classes(), copied) << "instance " << instance;
    }
    twin_classes += twins.twin_classes();
  }
  EXPECT_GT(twin_classes, 20000u);
}

TEST(TwinParts, PartsThatDifferInOneBitAreSolvedEach) {
  // Two copies of one link with two classes of 1 and 3 flows; the second copy's capacity is one
  // ulp larger, so it is no twin: both are solved, each to its own capacity.
  Problem p;
  p.capacity = {10e9, std::nextafter(10e9, 1e300)};
  for (int copy = 0; copy < 2; ++copy) {
    for (const std::uint32_t flows : {1u, 3u, 1u, 1u, 1u, 1u, 1u, 1u, 1u}) {
      p.flows.push_back(flows);
      p.links.push_back(static_cast<std::uint32_t>(copy));
      p.offsets.push_back(static_cast<std::uint32_t>(p.links.size()));
    }
  }
  TwinParts twins;
  const std::vector<double> rate = solve_twins(p, twins);
  EXPECT_EQ(twins.twin_classes(), 0u);
  EXPECT_DOUBLE_EQ(rate[0], 10e9 / 11);
  EXPECT_EQ(rate[9], std::nextafter(10e9, 1e300) / 11);
}

TEST(TwinParts, EqualPartsShareTheirRates) {
  // Eight copies of a parking lot (three 1 GB/s links, a long class and three short ones, 1, 3
  // and 1 flows on links 0, 1 and 2): the long flow gets 0.25 GB/s (link 1: four flows), the short
  // flows of links 0 and 2 get 0.75 GB/s. Seven copies' rates are copied from the first.
  Problem p;
  for (std::uint32_t copy = 0; copy < 8; ++copy) {
    const std::uint32_t b = 3 * copy;
    p.capacity.insert(p.capacity.end(), {1e9, 1e9, 1e9});
    const std::vector<std::vector<std::uint32_t>> paths{{b, b + 1, b + 2}, {b}, {b + 1}, {b + 2}};
    const std::uint32_t flows[] = {1, 1, 3, 1};
    for (std::size_t c = 0; c < paths.size(); ++c) {
      p.flows.push_back(flows[c]);
      p.links.insert(p.links.end(), paths[c].begin(), paths[c].end());
      p.offsets.push_back(static_cast<std::uint32_t>(p.links.size()));
    }
  }
  TwinParts twins;
  const std::vector<double> rate = solve_twins(p, twins);
  EXPECT_EQ(twins.twin_classes(), 7u * 4u);
  for (std::uint32_t copy = 0; copy < 8; ++copy) {
    EXPECT_DOUBLE_EQ(rate[4 * copy + 0], 0.25e9);
    EXPECT_DOUBLE_EQ(rate[4 * copy + 1], 0.75e9);
    EXPECT_DOUBLE_EQ(rate[4 * copy + 2], 0.25e9);
    EXPECT_DOUBLE_EQ(rate[4 * copy + 3], 0.75e9);
  }
}

}  // namespace
}  // namespace stepsim::engine::detail
