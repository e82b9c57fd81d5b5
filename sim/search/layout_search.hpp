// `stepsim search`: the fastest parallel layout of a scenario's model on its cluster.
//
// The search enumerates the layouts of a SearchSpace, removes those that cannot run before
// simulating any, and simulates the others fastest-bound first:
//  1. world: tp x cp x pp must divide the accelerator count (dp is what remains);
//  2. check: every rule `stepsim check` enforces, by the same code (parse_workload and
//     validate_layout on the scenario with the candidate's overrides), counted by the key named;
//  3. memory: the memory model's peak per rank of every stage must fit the device's capacity less
//     the margin (of the scenario with `memory_overrides` too: the whole model of a slice);
//  4. max-memory: the simulation's own estimated memory (estimate_resources, the guard of
//     `stepsim run --max-memory`) must not exceed `max_simulation_memory`;
//  5. bound: candidates are simulated in the order of their lower bound (lower_bound.hpp); once a
//     candidate's bound is no less than the best step time simulated before it, neither it nor any
//     later one can be faster, and none is simulated.
// Survivors are simulated on `threads` threads, each candidate an independent simulation of its own
// Scenario (simulate_step, as `stepsim run` does), in this process or shared among the processes
// of an MPI launch (distribution.hpp). Threads may start candidates past the point where the bound
// stops the search; their results are dropped, so the outcome is the same, byte for byte, whatever
// the thread and process counts (candidate_queue.hpp says why).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "sim/run/step_report.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/search/search_space.hpp"

namespace stepsim::search {

class Distribution;

struct Candidate {
  std::size_t index = 0;               // in enumeration order
  std::vector<std::string> overrides;  // "parallelism.tp=8", ...: what `stepsim run -o` takes
  std::string label;                   // "tp8 sp pp8 vpp2 dp16 zero1 mb1 selective"
  // The scenario's, with the overrides; under a distribution of several processes, only in the
  // process that checked the candidate (default elsewhere: nothing after the bound reads it).
  workloads::WorkloadSpec spec;
  Bytes memory_peak;  // the fullest stage's memory per rank
  Time bound;         // lower_bound(): the step cannot be faster
};

struct Evaluated {
  Candidate candidate;
  StepReport report;
};

struct RuleCount {
  std::string rule;  // "world", "check: parallelism.tp", "memory", "max-memory", "bound"
  std::size_t count = 0;
};

struct SearchOutcome {
  std::string space;  // describe(space)
  std::size_t enumerated = 0;
  std::vector<RuleCount> pruned;  // in the order the rules apply; rules that removed nothing too
  std::size_t simulated = 0;
  std::vector<Evaluated> ranked;  // every simulated candidate, fastest first (ties: enumeration)
  // The scenario's own layout, as a candidate: its label, and its bound when it passed the rules
  // before the bound (0 otherwise); its place in `ranked` when it was simulated (0 otherwise).
  std::string scenario_layout;
  Time scenario_bound;
  std::size_t scenario_rank = 0;
};

// Where a search stands, for progress lines.
struct SearchProgress {
  std::size_t simulated = 0;  // finished simulations (speculative ones included)
  std::size_t running = 0;
  std::size_t left_at_most = 0;  // candidates not started whose bound is below the best so far
  Time best = Time::max();
};

struct SearchOptions {
  unsigned threads = 1;
  double memory_margin = 0.0;  // fraction of the device's capacity kept free
  // Overrides applied on top of each candidate's for the memory rule alone ("model.layers=61"):
  // the whole model, when the scenario simulates a slice of its layers to keep the search short.
  std::vector<std::string> memory_overrides;
  // A candidate whose simulation is estimated to need more memory than this (estimate_resources,
  // as `stepsim run --max-memory` refuses a step) is pruned by the rule "max-memory"; 0: no limit.
  Bytes max_simulation_memory;
  bool prune_by_bound = true;  // false: simulate every candidate that fits (tests)
  // Called (on a worker thread, one call at a time) when a simulation starts or ends; under MPI,
  // on process 0 only.
  std::function<void(const SearchProgress&)> progress;
  // Who simulates (not owned); null: this process alone.
  Distribution* distribution = nullptr;
};

// The candidates of `space` on `base` that pass the world, check and memory rules, with their
// bounds, in enumeration order; `outcome` gets the counts.
std::vector<Candidate> prepare_candidates(const Scenario& base, const SearchSpace& space,
                                          const SearchOptions& options, SearchOutcome& outcome);

// The whole search. Throws InputError when no candidate passes the rules before the bound (the
// message names the rule and the first candidate's reason). Under a distribution, every process
// calls it; only process 0's outcome has the ranked layouts (the others' stop at the counts of the
// rules before the bound).
SearchOutcome search_layouts(const Scenario& base, const SearchSpace& space,
                             const SearchOptions& options);

// The scenario of one candidate: `base` with the candidate's overrides, as load_scenario would
// make it with them.
Scenario candidate_scenario(const Scenario& base, const Candidate& candidate);

// Runs fn(0), ..., fn(n - 1) on `threads` threads (each index once; fn must not share mutable
// state between indices). The first exception, by index, is rethrown after all have run.
void parallel_for(std::size_t n, unsigned threads, const std::function<void(std::size_t)>& fn);

}  // namespace stepsim::search
