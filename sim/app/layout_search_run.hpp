// `search`: the fastest parallel layout of a scenario's model on its cluster (enumerate, prune,
// bound and simulate; sim/search/layout_search.hpp, docs/search.md). The use behind `stepsim
// search` and stepsim.search().
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "sim/app/scenario_source.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/search/layout_search.hpp"

namespace stepsim::search {
class Distribution;
}

namespace stepsim::app {

struct SearchRequest {
  ScenarioSource scenario;  // its own layout must be valid
  // The values to try, each a YAML file of KEY: [V1, V2] or KEY=V1,V2, over the defaults.
  std::vector<std::string> spaces;
  double memory_margin = 0.0;  // fraction of the device's memory a layout must leave free
  unsigned jobs = 0;           // simulations at once in each process (0: the machine's cores)
  std::vector<std::string> memory_overrides;  // KEY=VALUE for the memory rule alone
  std::string max_memory;  // see memory_limit(); larger layouts are pruned (rule max-memory)
  // Under an MPI launch the simulations are shared among its processes and process 0 alone has
  // the results; null: this process alone.
  search::Distribution* distribution = nullptr;
  std::function<void(const search::SearchProgress&)> progress;  // now and then, when set
  // In the process that has the results, once the request is read and checked (an InputError it
  // throws is agreed among the processes of an MPI launch).
  std::function<void()> before_runs;
};

struct SearchRun {
  bool has_results = true;  // false in the processes of an MPI launch other than 0
  Scenario scenario;        // as read, before any candidate's overrides
  search::SearchOutcome outcome;
  unsigned threads = 1;  // simulations at once in each process
  int processes = 1;     // of the launch
};

// Runs the search.
//   THROWS: InputError naming file, key and value for a bad scenario or space, naming
//           --max-memory for a bad limit; the first error of any process under MPI.
SearchRun search(const SearchRequest& request);

}  // namespace stepsim::app
