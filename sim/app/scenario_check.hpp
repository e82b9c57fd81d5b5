// `check`: a scenario read and validated completely, with what it resolved to (the topology, the
// model with its parameter count, the layout and batch, the compute and network models, and the
// memory per rank of every pipeline stage against the accelerator's capacity). No simulation runs.
// The use behind `stepsim check`.
#pragma once

#include <iosfwd>
#include <string>

#include "sim/app/scenario_source.hpp"
#include "sim/scenario/scenario.hpp"

namespace stepsim::app {

// Reads and validates the scenario.
//   THROWS: InputError naming file, key and value for any problem.
Scenario check(const ScenarioSource& scenario);

// What `stepsim check` prints of `scenario`, read from `file` (as the user named it).
void write_check_summary(std::ostream& out, const std::string& file, const Scenario& scenario);

}  // namespace stepsim::app
