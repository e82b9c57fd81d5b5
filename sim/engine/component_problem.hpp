// Internal to the flow network: the max-min problem of one solve's component, in the form
// MaxMinSolver takes, with local indices (link j is the component's j-th link, class i its i-th
// class). The incremental solve's search (incremental_max_min.hpp) builds it class by class as it
// finds them; the solve fills in the capacities and hands it to the solver, which writes `rate`.
//
// Weights and caps are kept only from the first sprayed or capped class on: before it, the
// classes met have weight 1 on every link and no cap, and these are filled in for them then. A
// component with neither (most of a training step) carries no weight and no cap at all.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/engine/flow_tables.hpp"
#include "sim/engine/max_min_solver.hpp"

namespace stepsim::engine::detail {

struct ComponentProblem {
  std::vector<double> capacity;              // per link, bytes/s left by the classes outside
  std::vector<std::uint32_t> flows;          // per class
  std::vector<std::uint32_t> offsets = {0};  // per class and one more, into path
  std::vector<std::uint32_t> path;           // local link indices
  bool weighted = false;                     // a sprayed class is in: weight is filled
  std::vector<double> weight;                // parallel to path when weighted
  bool capped = false;                       // a capped class is in: cap is filled
  std::vector<double> cap;                   // per class when capped (kNoCap: none), bytes/s
  std::vector<double> rate;                  // per class: the solve's answer, bytes/s per flow

  // Empties it for the next component (capacity and rate are sized by the solve).
  void clear() {
    flows.clear();
    offsets.assign(1, 0);
    path.clear();
    weighted = false;
    weight.clear();
    capped = false;
    cap.clear();
  }
  // The class whose flows were pushed last has a cap of `value` bytes/s per flow.
  void add_cap(double value) {
    if (!capped) {
      capped = true;
      cap.assign(flows.size() - 1, kNoCap);
    }
    cap.push_back(value);
  }
  // A sprayed class comes next: the path so far gets weight 1 on every link.
  void start_weights() {
    weighted = true;
    weight.assign(path.size(), 1.0);
  }
  // The class whose links were pushed last is complete.
  void end_class() { offsets.push_back(static_cast<std::uint32_t>(path.size())); }

  MaxMinProblem view() const { return {capacity, flows, offsets, path, weight, cap}; }
};

}  // namespace stepsim::engine::detail
