// `compare`: several scenarios, or one scenario under several topologies or override sets,
// simulated one after the other (or searched for their fastest layout) and returned side by side;
// training steps, or serving scenarios' prefill and decode. The use behind `stepsim compare` and
// stepsim.compare().
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sim/app/scenario_source.hpp"
#include "sim/run/serve.hpp"
#include "sim/run/step_report.hpp"
#include "sim/search/layout_search.hpp"

namespace stepsim::search {
class Distribution;
}

namespace stepsim::app {

// Where a comparison is: variant `index` of `count` (`label`) starts (`starting`), or its search
// (`search` set) or its simulation (`done` of `total` operations) goes on.
struct CompareProgress {
  std::size_t index = 0;
  std::size_t count = 0;
  std::string label;
  bool starting = false;
  const search::SearchProgress* search = nullptr;
  std::uint64_t done = 0;
  std::uint64_t total = 0;
};

struct CompareRequest {
  // The scenarios; their overrides apply to every variant. Each is a variant, labelled by its
  // name(), unless topologies or variants are given: then there must be exactly one.
  std::vector<ScenarioSource> scenarios;
  std::vector<std::string> topologies;  // the one scenario on each of these topology specs
  std::vector<std::string> variants;    // the one scenario with each "K=V K=V" override set
  std::string max_memory;               // see memory_limit(); training steps only
  bool search = false;              // compare each variant's fastest layout (training steps only)
  std::vector<std::string> spaces;  // with search: as `stepsim search --space`
  std::vector<std::string> memory_overrides;  // with search: as `--memory-with`
  unsigned jobs = 0;  // with search: simulations at once (0: the machine's cores)
  // Under an MPI launch the simulations are shared among its processes and process 0 alone has
  // the results; null: this process alone.
  search::Distribution* distribution = nullptr;
  std::function<void(const std::string&)> note;          // messages for the user
  std::function<void(const std::string&)> detail;        // for the curious (-v)
  std::function<void(const CompareProgress&)> progress;  // now and then, when set
  // In the process that has the results, once every variant is read and checked (under MPI, an
  // InputError it throws is agreed among the processes for training steps).
  std::function<void()> before_runs;
};

struct Comparison {
  bool has_results = true;          // false in the processes of an MPI launch other than 0
  bool serving = false;             // serving scenarios: `serves`; training steps: `steps`
  std::vector<std::string> labels;  // per variant; with search, the layout in brackets after it
  std::vector<StepReport> steps;
  std::vector<ServeReport> serves;
};

// Runs the comparison.
//   THROWS: InputError naming file, key and value for a bad scenario, for topologies or variants
//           of several scenarios, a mix of serving and training scenarios, search or max_memory
//           with serving scenarios, or a step too large for the memory allowed (without search).
Comparison compare(const CompareRequest& request);

}  // namespace stepsim::app
