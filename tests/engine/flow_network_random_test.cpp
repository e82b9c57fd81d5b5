// Random instances: the incremental solve against the full re-solve, the rates against the
// brute-force oracle, and determinism of the event sequence.
#include <gtest/gtest.h>
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "sim/engine/flow_network.hpp"
#include "tests/engine/brute_force_max_min.hpp"

namespace stepsim::engine {
namespace {

struct RandomFlow {
  std::vector<std::vector<LinkId>> paths;  // one or two paths (weights 1 and 2)
  std::int64_t bytes = 0;
  Time start;
  int after = -1;  // when >= 0: started from this flow's completion callback instead
};

struct RandomInstance {
  std::vector<double> capacity;
  std::vector<Time> latency;
  std::vector<RandomFlow> flows;
};

RandomInstance make_instance(std::mt19937_64& rng, bool with_latency) {
  RandomInstance in;
  const int links = std::uniform_int_distribution<int>(2, 12)(rng);
  for (int l = 0; l < links; ++l) {
    in.capacity.push_back(std::uniform_real_distribution<double>(1e9, 50e9)(rng));
    in.latency.push_back(with_latency ? Time::ns(std::uniform_int_distribution<int>(0, 2000)(rng))
                                      : Time::zero());
  }
  const int flows = std::uniform_int_distribution<int>(1, 40)(rng);
  // Few distinct start times, so that several flows start in one instant.
  const int start_slots = std::uniform_int_distribution<int>(1, 6)(rng);
  auto random_path = [&] {
    const int len = std::uniform_int_distribution<int>(1, std::min(4, links))(rng);
    std::vector<LinkId> path;
    while (static_cast<int>(path.size()) < len) {
      const LinkId l{std::uniform_int_distribution<std::uint32_t>(0, links - 1)(rng)};
      if (std::find(path.begin(), path.end(), l) == path.end()) path.push_back(l);
    }
    return path;
  };
  for (int f = 0; f < flows; ++f) {
    RandomFlow rf;
    rf.paths.push_back(random_path());
    if (std::uniform_int_distribution<int>(0, 5)(rng) == 0) rf.paths.push_back(random_path());
    rf.bytes = std::uniform_int_distribution<int>(0, 9)(rng) == 0
                   ? 0
                   : std::uniform_int_distribution<std::int64_t>(1, 4'000'000)(rng);
    rf.start = Time::us(50) * std::uniform_int_distribution<int>(0, start_slots - 1)(rng);
    if (f > 0 && std::uniform_int_distribution<int>(0, 4)(rng) == 0) {
      rf.after = std::uniform_int_distribution<int>(0, f - 1)(rng);
    }
    in.flows.push_back(rf);
  }
  return in;
}

// Runs the instance; returns every flow's completion time (by index) and the completion order.
struct RunResult {
  std::vector<Time> finish;
  std::vector<int> order;
  std::uint64_t solves = 0;
  std::uint64_t boundary_expansions = 0;
  std::uint64_t boundary_estimates = 0;
  std::uint64_t boundary_estimates_refused = 0;
  std::uint64_t kept_at_arrivals = 0;
  std::uint64_t twin_classes = 0;
};

RunResult run_instance(const RandomInstance& in, SolveStrategy strategy) {
  Simulator sim;
  FlowNetwork net(sim, FlowNetworkOptions{.solve = strategy});
  for (std::size_t l = 0; l < in.capacity.size(); ++l) {
    net.add_link(BytesPerSecond(in.capacity[l]), in.latency[l]);
  }
  RunResult result;
  result.finish.assign(in.flows.size(), Time::max());
  std::vector<std::vector<int>> dependents(in.flows.size());
  for (std::size_t f = 0; f < in.flows.size(); ++f) {
    if (in.flows[f].after >= 0) dependents[in.flows[f].after].push_back(static_cast<int>(f));
  }
  std::function<void(int)> start = [&](int f) {
    const RandomFlow& rf = in.flows[f];
    std::vector<WeightedPath> paths;
    for (std::size_t p = 0; p < rf.paths.size(); ++p) {
      paths.push_back({rf.paths[p], static_cast<double>(p + 1)});
    }
    net.start_flow(f, f + 1, Bytes(rf.bytes), paths, [&, f](const FlowCompletion& done) {
      result.finish[f] = done.finish;
      result.order.push_back(f);
      for (const int d : dependents[f])
        start(d);
    });
  };
  for (std::size_t f = 0; f < in.flows.size(); ++f) {
    if (in.flows[f].after < 0) {
      sim.schedule_at(in.flows[f].start, [&start, f] { start(static_cast<int>(f)); });
    }
  }
  sim.run();
  net.check_invariants();
  EXPECT_EQ(net.active_flows(), 0u);
  result.solves = net.solves();
  result.kept_at_arrivals = net.kept_at_arrivals();
  result.twin_classes = net.twin_classes();
  result.boundary_expansions = net.boundary_expansions();
  result.boundary_estimates = net.boundary_estimates();
  result.boundary_estimates_refused = net.boundary_estimates_refused();
  return result;
}

// The flows still active, as the brute-force oracles take them: each one's links, the weight of
// each (its share when sprayed, else 1), and which flow of the instance it is.
struct ActiveFlows {
  std::vector<std::vector<int>> paths;
  std::vector<std::vector<double>> weights;
  std::vector<std::size_t> which;
};

ActiveFlows active_flows(const RandomInstance& in, const std::vector<bool>& active,
                         const std::vector<std::vector<double>>& shares) {
  ActiveFlows out;
  for (std::size_t f = 0; f < in.flows.size(); ++f) {
    if (!active[f]) continue;
    std::vector<int> p;
    for (const LinkId l : in.flows[f].paths[0])
      p.push_back(static_cast<int>(l.value()));
    const bool sprayed = f < shares.size() && !shares[f].empty();
    out.weights.push_back(sprayed ? shares[f] : std::vector<double>(p.size(), 1.0));
    out.paths.push_back(std::move(p));
    out.which.push_back(f);
  }
  return out;
}

TEST(FlowNetworkRandom, IncrementalSolveMatchesFullResolveOn1000Instances) {
  // Same completion times to a relative 1e-9 (times are whole picoseconds, so at least 1 ps of
  // slack for the rounding of a drain end), on random links, paths, sizes and start times,
  // including multi-path flows, zero-byte flows and flows started from completion callbacks.
  std::mt19937_64 rng(77);
  std::uint64_t expansions = 0;
  std::uint64_t estimates = 0;
  std::uint64_t refused = 0;
  std::uint64_t kept_at_arrivals = 0;
  for (int instance = 0; instance < 1000; ++instance) {
    const RandomInstance in = make_instance(rng, instance % 2 == 0);
    const RunResult incremental = run_instance(in, SolveStrategy::kIncremental);
    const RunResult full = run_instance(in, SolveStrategy::kFullResolve);
    for (std::size_t f = 0; f < in.flows.size(); ++f) {
      const auto a = static_cast<double>(incremental.finish[f].picoseconds());
      const auto b = static_cast<double>(full.finish[f].picoseconds());
      ASSERT_NEAR(a, b, std::max(1.0, 1e-9 * b)) << "instance " << instance << " flow " << f;
    }
    EXPECT_EQ(incremental.solves, full.solves) << "one solve per instant with changes, either way";
    expansions += incremental.boundary_expansions;
    estimates += incremental.boundary_estimates;
    refused += incremental.boundary_estimates_refused;
    kept_at_arrivals += incremental.kept_at_arrivals;
    EXPECT_EQ(full.kept_at_arrivals, 0u);
  }
  // The incremental solve crosses only saturated links; links with spare capacity that the new
  // rates fill make it search on and solve again. The instances must exercise that path, and
  // both outcomes of a bounded (estimated) boundary link: left out, and summed after all; and
  // solves at arrivals that keep the classes below the arrivals' bound out.
  EXPECT_GT(kept_at_arrivals, 1000u);
  EXPECT_GT(expansions, 0u);
  EXPECT_GT(estimates, refused);
  EXPECT_GT(refused, 0u);
}

// `copies` copies of an instance on copies of its links, interleaved (link l of copy k is
// l * copies + k; flow f of copy k is f * copies + k), the copies' flows started together: the
// replicas of a training step, whose parts the solves find equal.
RandomInstance replicate(const RandomInstance& in, std::uint32_t copies) {
  RandomInstance out;
  for (std::size_t l = 0; l < in.capacity.size(); ++l) {
    for (std::uint32_t k = 0; k < copies; ++k) {
      out.capacity.push_back(in.capacity[l]);
      out.latency.push_back(in.latency[l]);
    }
  }
  for (const RandomFlow& f : in.flows) {
    for (std::uint32_t k = 0; k < copies; ++k) {
      RandomFlow copy = f;
      for (auto& path : copy.paths)
        for (LinkId& l : path)
          l = LinkId{l.value() * copies + k};
      if (f.after >= 0) copy.after = f.after * static_cast<int>(copies) + static_cast<int>(k);
      out.flows.push_back(std::move(copy));
    }
  }
  return out;
}

TEST(FlowNetworkRandom, TwinPartsGiveTheCompletionTimesOfTheWholeSolve) {
  // Replicated instances run with twin parts (each distinct part solved once, twin_parts.hpp) and
  // without (each component solved whole): the same completion times to the picosecond, the same
  // order, the same solves; every copy of a flow finishes when the first copy does.
  std::mt19937_64 rng(1703);
  std::uint64_t twin_classes = 0;
  for (int instance = 0; instance < 300; ++instance) {
    const std::uint32_t copies = 2 + static_cast<std::uint32_t>(instance % 4);
    const RandomInstance in = replicate(make_instance(rng, instance % 2 == 0), copies);
    const RunResult twins = run_instance(in, SolveStrategy::kIncremental);
    const RunResult whole = run_instance(in, SolveStrategy::kWholeComponent);
    for (std::size_t f = 0; f < in.flows.size(); ++f) {
      ASSERT_EQ(twins.finish[f], whole.finish[f]) << "instance " << instance << " flow " << f;
      ASSERT_EQ(twins.finish[f], twins.finish[f - f % copies])
          << "instance " << instance << " flow " << f << ": a copy finishes apart";
    }
    EXPECT_EQ(twins.order, whole.order) << "instance " << instance;
    EXPECT_EQ(twins.solves, whole.solves);
    EXPECT_EQ(whole.twin_classes, 0u);
    twin_classes += twins.twin_classes;
  }
  // The copies were found: most of the classes of the solves came from twins.
  EXPECT_GT(twin_classes, 10000u);
}

TEST(FlowNetworkRandom, BoundedBoundaryLinksGiveTheCompletionTimesOfExactSums) {
  // The boundary links' outside load bounded (the default) or summed class by class: the same
  // rates wherever a bound stands (a link that does not fill never limits a rate), the loads
  // equal up to rounding, so the same completion times to the picosecond and the same solves.
  std::mt19937_64 rng(1616);
  std::uint64_t estimates = 0;
  for (int instance = 0; instance < 1000; ++instance) {
    const RandomInstance in = make_instance(rng, instance % 2 == 0);
    const RunResult bounded = run_instance(in, SolveStrategy::kIncremental);
    const RunResult summed = run_instance(in, SolveStrategy::kSummedBoundary);
    for (std::size_t f = 0; f < in.flows.size(); ++f) {
      ASSERT_EQ(bounded.finish[f], summed.finish[f]) << "instance " << instance << " flow " << f;
    }
    EXPECT_EQ(bounded.order, summed.order) << "instance " << instance;
    EXPECT_EQ(bounded.solves, summed.solves);
    EXPECT_EQ(bounded.boundary_expansions, summed.boundary_expansions);
    EXPECT_EQ(summed.boundary_estimates, 0u);
    estimates += bounded.boundary_estimates;
  }
  EXPECT_GT(estimates, 1000u);
}

TEST(FlowNetworkRandom, RatesMatchBruteForceWaterFilling) {
  // At several instants of random runs, every active flow's rate equals the brute-force max-min
  // rate over the active flows (relative 1e-9). Single-path flows, no latency, so a flow is active
  // exactly until its completion callback.
  std::mt19937_64 rng(4242);
  for (int instance = 0; instance < 200; ++instance) {
    RandomInstance in = make_instance(rng, false);
    Simulator sim;
    FlowNetwork net(sim);
    for (const double c : in.capacity)
      net.add_link(BytesPerSecond(c), Time::zero());
    std::vector<FlowId> ids(in.flows.size());
    std::vector<bool> active(in.flows.size(), false);
    for (std::size_t f = 0; f < in.flows.size(); ++f) {
      in.flows[f].paths.resize(1);
      in.flows[f].bytes = std::max<std::int64_t>(in.flows[f].bytes, 1);
      sim.schedule_at(in.flows[f].start, [&, f] {
        active[f] = true;
        ids[f] = net.start_flow(0, 0, Bytes(in.flows[f].bytes), in.flows[f].paths[0],
                                [&active, f](const FlowCompletion&) { active[f] = false; });
      });
    }
    for (int probe = 1; probe <= 20; ++probe) {
      sim.run_until(Time::us(25) * probe + Time::ps(probe));
      const ActiveFlows now = active_flows(in, active, {});
      const std::vector<double> expected = testing::brute_force_max_min(in.capacity, now.paths);
      for (std::size_t k = 0; k < now.which.size(); ++k) {
        ASSERT_NEAR(net.current_rate(ids[now.which[k]]).value(), expected[k], 1e-9 * expected[k])
            << "instance " << instance << " probe " << probe;
      }
      net.check_invariants();
    }
    sim.run();
    EXPECT_EQ(net.active_flows(), 0u);
  }
}

TEST(FlowNetworkRandom, SprayedFlowsMatchWeightedBruteForceAndFullResolve) {
  // Half the flows sprayed (each link of the path with a random share in (0, 1]), half plain: at
  // every probe every active flow's rate equals the weighted brute-force max-min rate (relative
  // 1e-9), the invariants hold (bytes carried = bytes drained x the sum of the shares), and the
  // incremental solve gives the full re-solve's completion times.
  std::mt19937_64 rng(2026);
  for (int instance = 0; instance < 200; ++instance) {
    RandomInstance in = make_instance(rng, false);
    std::vector<std::vector<double>> shares(in.flows.size());
    for (std::size_t f = 0; f < in.flows.size(); ++f) {
      in.flows[f].paths.resize(1);
      in.flows[f].bytes = std::max<std::int64_t>(in.flows[f].bytes, 1);
      std::vector<LinkId>& path = in.flows[f].paths[0];
      std::sort(path.begin(), path.end(), [](LinkId a, LinkId b) { return a.value() < b.value(); });
      path.erase(std::unique(path.begin(), path.end(),
                             [](LinkId a, LinkId b) { return a.value() == b.value(); }),
                 path.end());
      if (f % 2 == 0) {
        for (std::size_t i = 0; i < path.size(); ++i)
          shares[f].push_back(std::uniform_real_distribution<double>(0.1, 1.0)(rng));
      }
    }
    std::vector<Time> finish[2];
    for (const bool full : {false, true}) {
      Simulator sim;
      FlowNetwork net(sim, FlowNetworkOptions{.solve = full ? SolveStrategy::kFullResolve
                                                            : SolveStrategy::kIncremental});
      for (const double c : in.capacity)
        net.add_link(BytesPerSecond(c), Time::zero());
      std::vector<FlowId> ids(in.flows.size());
      std::vector<bool> active(in.flows.size(), false);
      finish[full].assign(in.flows.size(), Time::zero());
      for (std::size_t f = 0; f < in.flows.size(); ++f) {
        sim.schedule_at(in.flows[f].start, [&, f] {
          active[f] = true;
          auto done = [&active, &finish, full, f](const FlowCompletion& c) {
            active[f] = false;
            finish[full][f] = c.finish;
          };
          const std::vector<LinkId>& path = in.flows[f].paths[0];
          if (shares[f].empty()) {
            ids[f] = net.start_flow(0, 0, Bytes(in.flows[f].bytes), path, done);
          } else {
            std::vector<LinkShare> links;
            for (std::size_t i = 0; i < path.size(); ++i)
              links.push_back({path[i], shares[f][i]});
            ids[f] =
                net.start_sprayed_flow(0, 0, Bytes(in.flows[f].bytes), links, Time::zero(), done);
          }
        });
      }
      for (int probe = 1; probe <= 10 && !full; ++probe) {
        sim.run_until(Time::us(25) * probe + Time::ps(probe));
        const ActiveFlows now = active_flows(in, active, shares);
        const std::vector<double> expected =
            testing::brute_force_weighted_max_min(in.capacity, now.paths, now.weights);
        for (std::size_t k = 0; k < now.which.size(); ++k) {
          ASSERT_NEAR(net.current_rate(ids[now.which[k]]).value(), expected[k], 1e-9 * expected[k])
              << "instance " << instance << " probe " << probe;
        }
        net.check_invariants();
      }
      sim.run();
      net.check_invariants();
      EXPECT_EQ(net.active_flows(), 0u);
    }
    for (std::size_t f = 0; f < in.flows.size(); ++f) {
      const auto a = static_cast<double>(finish[0][f].picoseconds());
      const auto b = static_cast<double>(finish[1][f].picoseconds());
      ASSERT_NEAR(a, b, std::max(1.0, 1e-9 * b)) << "instance " << instance << " flow " << f;
    }
  }
}

// Caps per flow (FlowNetwork::start_flow with a rate cap): the run with native caps, incremental
// and fully re-solved, against the same flows each on a private link of its cap's bandwidth (what
// a cap stands for), and the rates at probes against the brute-force oracle with those links.
enum class CapMode { kNative, kNativeFull, kPrivateLinks };

std::vector<Time> run_capped(const RandomInstance& in, const std::vector<double>& cap, CapMode mode,
                             std::vector<std::vector<double>>* probes = nullptr,
                             std::vector<std::vector<bool>>* probe_active = nullptr) {
  Simulator sim;
  FlowNetwork net(
      sim, FlowNetworkOptions{.solve = mode == CapMode::kNativeFull ? SolveStrategy::kFullResolve
                                                                    : SolveStrategy::kIncremental});
  for (std::size_t l = 0; l < in.capacity.size(); ++l)
    net.add_link(BytesPerSecond(in.capacity[l]), in.latency[l]);
  std::vector<std::vector<LinkId>> path(in.flows.size());
  for (std::size_t f = 0; f < in.flows.size(); ++f) {
    path[f] = in.flows[f].paths[0];
    if (mode == CapMode::kPrivateLinks && std::isfinite(cap[f]))
      path[f].push_back(net.add_link(BytesPerSecond(cap[f]), Time::zero()));
  }
  std::vector<Time> finish(in.flows.size(), Time::max());
  std::vector<FlowId> ids(in.flows.size());
  std::vector<bool> active(in.flows.size(), false);
  for (std::size_t f = 0; f < in.flows.size(); ++f) {
    sim.schedule_at(in.flows[f].start, [&, f] {
      active[f] = true;
      auto done = [&, f](const FlowCompletion& c) {
        finish[f] = c.finish;
        active[f] = false;
      };
      ids[f] = mode == CapMode::kPrivateLinks || !std::isfinite(cap[f])
                   ? net.start_flow(0, 0, Bytes(in.flows[f].bytes), path[f], done)
                   : net.start_flow(0, 0, Bytes(in.flows[f].bytes), path[f], BytesPerSecond(cap[f]),
                                    done);
    });
  }
  if (probes != nullptr) {
    for (int probe = 1; probe <= 10; ++probe) {
      sim.run_until(Time::us(25) * probe + Time::ps(probe));
      std::vector<double> rates;
      for (std::size_t f = 0; f < in.flows.size(); ++f)
        rates.push_back(active[f] ? net.current_rate(ids[f]).value() : 0.0);
      probes->push_back(rates);
      probe_active->push_back(active);
      net.check_invariants();
    }
  }
  sim.run();
  net.check_invariants();
  EXPECT_EQ(net.active_flows(), 0u);
  return finish;
}

TEST(FlowNetworkRandom, CappedFlowsMatchPrivateLinksFullResolveAndBruteForce) {
  std::mt19937_64 rng(5150);
  int at_cap = 0, below_cap = 0;  // capped flows at probes: held by their cap, or by a link
  for (int instance = 0; instance < 300; ++instance) {
    RandomInstance in = make_instance(rng, false);
    // One path each, no callbacks, a cap on about a third of the flows, from three values so that
    // capped flows on one path share a class.
    const double caps[3] = {std::uniform_real_distribution<double>(0.5e9, 30e9)(rng),
                            std::uniform_real_distribution<double>(0.5e9, 30e9)(rng),
                            std::uniform_real_distribution<double>(0.5e9, 30e9)(rng)};
    std::vector<double> cap(in.flows.size(), std::numeric_limits<double>::infinity());
    for (std::size_t f = 0; f < in.flows.size(); ++f) {
      in.flows[f].paths.resize(1);
      in.flows[f].after = -1;
      in.flows[f].bytes = std::max<std::int64_t>(in.flows[f].bytes, 1);
      if (std::uniform_int_distribution<int>(0, 2)(rng) == 0)
        cap[f] = caps[std::uniform_int_distribution<int>(0, 2)(rng)];
    }
    std::vector<std::vector<double>> probes;
    std::vector<std::vector<bool>> probe_active;
    const auto native = run_capped(in, cap, CapMode::kNative, &probes, &probe_active);
    const auto full = run_capped(in, cap, CapMode::kNativeFull);
    const auto links = run_capped(in, cap, CapMode::kPrivateLinks);
    for (std::size_t f = 0; f < in.flows.size(); ++f) {
      const auto a = static_cast<double>(native[f].picoseconds());
      ASSERT_NEAR(a, static_cast<double>(full[f].picoseconds()), std::max(1.0, 1e-9 * a))
          << "instance " << instance << " flow " << f;
      ASSERT_NEAR(a, static_cast<double>(links[f].picoseconds()), std::max(1.0, 1e-9 * a))
          << "instance " << instance << " flow " << f;
    }
    // The oracle: each capped flow on a link of its own of the cap's bandwidth.
    for (std::size_t p = 0; p < probes.size(); ++p) {
      std::vector<double> capacity = in.capacity;
      std::vector<std::vector<int>> paths;
      std::vector<std::size_t> which;
      for (std::size_t f = 0; f < in.flows.size(); ++f) {
        if (!probe_active[p][f]) continue;
        std::vector<int> links_of_f;
        for (const LinkId l : in.flows[f].paths[0])
          links_of_f.push_back(static_cast<int>(l.value()));
        if (std::isfinite(cap[f])) {
          links_of_f.push_back(static_cast<int>(capacity.size()));
          capacity.push_back(cap[f]);
        }
        paths.push_back(links_of_f);
        which.push_back(f);
      }
      const std::vector<double> expected = testing::brute_force_max_min(capacity, paths);
      for (std::size_t k = 0; k < which.size(); ++k) {
        ASSERT_NEAR(probes[p][which[k]], expected[k], 1e-9 * expected[k])
            << "instance " << instance << " probe " << p;
        ASSERT_LE(probes[p][which[k]], cap[which[k]] * (1 + 1e-12));
        if (std::isfinite(cap[which[k]]))
          ++(probes[p][which[k]] >= cap[which[k]] * (1 - 1e-12) ? at_cap : below_cap);
      }
    }
  }
  // Both kinds occur, often.
  EXPECT_GT(at_cap, 1000);
  EXPECT_GT(below_cap, 1000);
}

TEST(FlowNetworkRandom, TwoRunsProduceIdenticalEventSequences) {
  // Determinism: the same instance run twice gives the same completion order and the same times,
  // to the picosecond.
  std::mt19937_64 rng(9);
  for (int instance = 0; instance < 50; ++instance) {
    const RandomInstance in = make_instance(rng, true);
    const RunResult first = run_instance(in, SolveStrategy::kIncremental);
    const RunResult second = run_instance(in, SolveStrategy::kIncremental);
    EXPECT_EQ(first.order, second.order);
    EXPECT_EQ(first.finish, second.finish);
  }
}

}  // namespace
}  // namespace stepsim::engine
