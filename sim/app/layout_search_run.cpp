#include "sim/app/layout_search_run.hpp"

#include <optional>

#include "sim/app/memory_guard.hpp"
#include "sim/common/input_error.hpp"
#include "sim/search/distribution.hpp"

namespace stepsim::app {

SearchRun search(const SearchRequest& request) {
  search::LocalDistribution local;
  search::Distribution& distribution =
      request.distribution != nullptr ? *request.distribution : local;
  std::optional<Scenario> loaded;
  search::SearchSpace space;
  search::SearchOptions options;
  std::string error;
  try {
    loaded.emplace(load_training_scenario(request.scenario));
    // The guard of `run` applies to every candidate, the scenario's own layout included: one too
    // big to simulate is pruned, not an error (rule max-memory).
    options.max_simulation_memory = memory_limit(request.max_memory).first;
    space = search::default_space(*loaded);
    for (const auto& s : request.spaces)
      search::apply_space_argument(space, s);
    if (distribution.writes_output() && request.before_runs) request.before_runs();
  } catch (const InputError& e) {
    error = e.what();
  }
  if (const std::string first = distribution.first_error(error); !first.empty())
    throw InputError(first);
  options.threads = distribution.threads(request.jobs);
  options.memory_margin = request.memory_margin;
  options.memory_overrides = request.memory_overrides;
  options.distribution = &distribution;
  options.progress = request.progress;
  SearchRun run{distribution.writes_output(),
                std::move(*loaded),
                {},
                options.threads,
                distribution.processes()};
  run.outcome = search::search_layouts(run.scenario, space, options);
  return run;
}

}  // namespace stepsim::app
