// Which max-min solve the flow network runs at the end of each instant with changes, chosen once
// per network (FlowNetworkOptions::solve). Every strategy gives the exact max-min rates, bit for
// bit (link loads equal up to rounding); they differ only in the work done. The simulator runs
// kIncremental. The others leave out one or all of its shortcuts: they are the references that
// tests/engine checks the shortcuts against and that sim/bench/engine_bench.cpp measures them by.
#pragma once

#include <cstdint>

namespace stepsim::engine {

enum class SolveStrategy : std::uint8_t {
  // The component of links and classes the instant's changes reach (incremental_max_min.hpp),
  // with both shortcuts: the outside load of its boundary links bounded rather than summed class
  // by class ("Estimated boundary links"), and its twin parts solved once (twin_parts.hpp).
  kIncremental,
  // The component, every boundary link's outside load summed class by class.
  kSummedBoundary,
  // The component, solved whole: no twin parts.
  kWholeComponent,
  // Every link and class at every solve: no component, no shortcut.
  kFullResolve,
};

}  // namespace stepsim::engine
