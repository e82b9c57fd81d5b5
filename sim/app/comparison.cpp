#include "sim/app/comparison.hpp"

#include <fmt/format.h>
#include <optional>
#include <sstream>

#include "sim/app/memory_guard.hpp"
#include "sim/common/input_error.hpp"
#include "sim/run/simulate.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/scenario/serving_scenario.hpp"
#include "sim/search/candidate_queue.hpp"
#include "sim/search/distribution.hpp"

namespace stepsim::app {
namespace {

struct Variant {
  std::string label;
  ScenarioSource source;
};

std::vector<std::string> split_assignments(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string word;
  while (in >> word)
    out.push_back(word);
  return out;
}

std::vector<Variant> make_variants(const CompareRequest& r) {
  const bool varied = !r.topologies.empty() || !r.variants.empty();
  if (varied && r.scenarios.size() != 1)
    throw InputError("--topology and --variant compare one scenario; give exactly one file");
  std::vector<Variant> variants;
  if (!varied) {
    for (const auto& s : r.scenarios)
      variants.push_back({s.name(), s});
  }
  for (const auto& t : r.topologies) {
    variants.push_back({t, r.scenarios.front()});
    variants.back().source.overrides.push_back("topology=" + t);
  }
  for (const auto& v : r.variants) {
    variants.push_back({v, r.scenarios.front()});
    for (auto& a : split_assignments(v))
      variants.back().source.overrides.push_back(a);
  }
  return variants;
}

// Whether the scenarios are serving scenarios (a `serving:` section); every one must be of the
// same kind, and a serving comparison takes neither search nor max_memory.
bool serving_kind(const CompareRequest& r) {
  std::optional<std::string> training, serving;
  for (const auto& s : r.scenarios)
    (is_serving(s) ? serving : training) = s.name();
  if (serving && training)
    throw InputError(fmt::format(
        "{} is a serving scenario and {} a training scenario: compare one kind at a time", *serving,
        *training));
  if (!serving) return false;
  if (r.search)
    throw InputError(
        fmt::format("--search compares training layouts; {} is a serving scenario", *serving));
  if (!r.max_memory.empty())
    throw InputError(
        fmt::format("--max-memory applies to training steps; {} is a serving scenario", *serving));
  return true;
}

// Serving scenarios (docs/serving.md): each variant's prefill pass and decode step. Runs in the
// process that has the results (under an MPI launcher the others only validate).
Comparison compare_serving(const CompareRequest& r, const std::vector<Variant>& variants,
                           bool has_results) {
  std::vector<ServingScenario> scenarios;
  for (const auto& v : variants)
    scenarios.push_back(load_serving_scenario(v.source));
  Comparison c;
  c.serving = true;
  c.has_results = has_results;
  if (!has_results) return c;
  if (r.before_runs) r.before_runs();
  for (std::size_t i = 0; i < scenarios.size(); ++i) {
    if (r.detail) r.detail(fmt::format("simulating {}", variants[i].label));
    c.serves.push_back(make_serve_report(scenarios[i], std::nullopt));
    c.labels.push_back(variants[i].label);
  }
  return c;
}

// Every training variant read and checked before anything runs, the first error agreed among
// the processes of an MPI launch.
std::vector<Scenario> load_training(const CompareRequest& r, const std::vector<Variant>& variants,
                                    search::Distribution& distribution, Bytes& max_memory) {
  std::vector<Scenario> scenarios;
  std::string error;
  try {
    for (const auto& v : variants) {
      scenarios.push_back(load_training_scenario(v.source));
      // A search prunes the layouts too big to simulate (rule max-memory) instead.
      if (!r.search)
        tell_estimate(guard_step_memory(scenarios.back().workload, r.max_memory), r.note, r.detail);
    }
    max_memory = memory_limit(r.max_memory).first;
    if (distribution.writes_output() && r.before_runs) r.before_runs();
  } catch (const InputError& e) {
    error = e.what();
  }
  if (const std::string first = distribution.first_error(error); !first.empty())
    throw InputError(first);
  return scenarios;
}

// Each variant at its best: a fixed layout favours the fabric it was written for.
void search_each(const CompareRequest& r, const std::vector<Scenario>& scenarios,
                 search::Distribution& distribution, Bytes max_memory, Comparison& c) {
  for (std::size_t i = 0; i < scenarios.size(); ++i) {
    if (r.detail) r.detail(fmt::format("searching {}", c.labels[i]));
    search::SearchSpace space = search::default_space(scenarios[i]);
    for (const auto& s : r.spaces)
      search::apply_space_argument(space, s);
    search::SearchOptions so;
    so.threads = distribution.threads(r.jobs);
    so.distribution = &distribution;
    so.memory_overrides = r.memory_overrides;
    so.max_simulation_memory = max_memory;
    if (r.progress) {
      so.progress = [&, i](const search::SearchProgress& p) {
        r.progress({i, scenarios.size(), c.labels[i], false, &p, 0, 0});
      };
    }
    search::SearchOutcome outcome = search::search_layouts(scenarios[i], space, so);
    if (!c.has_results) continue;
    c.labels[i] += " [" + outcome.ranked.front().candidate.label + "]";
    c.steps.push_back(std::move(outcome.ranked.front().report));
  }
}

// One variant after the other in one process (the first error, in order, is the one reported),
// or shared among the processes of an MPI launch.
void simulate_each(const CompareRequest& r, const std::vector<Scenario>& scenarios,
                   search::Distribution& distribution, Comparison& c) {
  search::CandidateQueue queue(std::vector<Time>(scenarios.size()), false, {});
  const std::size_t n = scenarios.size();
  distribution.run(queue, 1, [&](std::size_t i) {
    if (r.detail) r.detail(fmt::format("simulating {}", c.labels[i]));
    SimulateOptions simulate;
    if (r.progress) {
      r.progress({i, n, c.labels[i], true, nullptr, 0, 0});
      simulate.progress = [&r, &c, i, n](std::uint64_t done, std::uint64_t total) {
        r.progress({i, n, c.labels[i], false, nullptr, done, total});
      };
    }
    return simulate_step(scenarios[i], simulate);
  });
  if (!c.has_results) return;
  for (std::size_t i = 0; i < n; ++i) {
    if (queue.errors()[i]) std::rethrow_exception(queue.errors()[i]);
    c.steps.push_back(std::move(*queue.reports()[i]));
  }
}

}  // namespace

Comparison compare(const CompareRequest& request) {
  const std::vector<Variant> variants = make_variants(request);
  search::LocalDistribution local;
  search::Distribution& distribution =
      request.distribution != nullptr ? *request.distribution : local;
  const bool has_results = distribution.writes_output();
  if (serving_kind(request)) return compare_serving(request, variants, has_results);
  Bytes max_memory;
  const std::vector<Scenario> scenarios =
      load_training(request, variants, distribution, max_memory);
  Comparison c;
  c.has_results = has_results;
  for (const auto& v : variants)
    c.labels.push_back(v.label);
  if (request.search)
    search_each(request, scenarios, distribution, max_memory, c);
  else
    simulate_each(request, scenarios, distribution, c);
  return c;
}

}  // namespace stepsim::app
