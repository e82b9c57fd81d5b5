// What `stepsim search` writes: the ranked table people read, CSV and JSON for tools, and the best
// layout as a scenario file that `stepsim run` takes. Deterministic: no wall-clock figures.
#pragma once

#include <iosfwd>
#include <nlohmann/json.hpp>

#include "sim/search/layout_search.hpp"

namespace stepsim::search {

// The counts (enumerated, pruned per rule, simulated) and the `top` fastest layouts: layout, step
// time, tokens/s, MFU, exposed communication per dimension (on the first representative rank),
// the fullest stage's memory and the busiest of the representative stages.
void print_search(std::ostream& out, const SearchOutcome& outcome, std::size_t top);

// One row per simulated layout, fastest first:
// rank,layout,step_time_s,bound_s,tokens_per_s,mfu,exposed_<dim>_s...,memory_peak_bytes,
// bottleneck,overrides (the overrides separated by spaces).
void write_csv(std::ostream& out, const SearchOutcome& outcome);
nlohmann::ordered_json to_json(const SearchOutcome& outcome);

// The scenario of `best` as YAML: `base`'s document with the candidate's overrides and the name
// "<base name>-best", every include expanded, with a comment naming the search's result.
void write_scenario_yaml(std::ostream& out, const Scenario& base, const Evaluated& best);

// "rank 0 (stage 0)": the representative rank with the most compute and exposed communication.
std::string bottleneck(const StepReport& report);

}  // namespace stepsim::search
