// An independent, deliberately simple max-min oracle for the tests: one entry per flow (no
// classes), and the "raise everyone by the smallest headroom" form of water-filling rather than
// the solver's heap of fair shares. O(iterations * (flows * path + links)).
#pragma once

#include <algorithm>
#include <cstddef>
#include <limits>
#include <vector>

namespace stepsim::engine::testing {

// paths[f] lists the links flow f crosses (a link listed twice counts twice).
inline std::vector<double> brute_force_max_min(const std::vector<double>& capacity,
                                               const std::vector<std::vector<int>>& paths) {
  const std::size_t links = capacity.size();
  std::vector<double> rate(paths.size(), 0.0);
  std::vector<bool> frozen(paths.size(), false);
  std::vector<double> headroom = capacity;
  for (;;) {
    std::vector<int> unfrozen_on(links, 0);
    bool any = false;
    for (std::size_t f = 0; f < paths.size(); ++f) {
      if (frozen[f]) continue;
      any = true;
      for (const int l : paths[f])
        ++unfrozen_on[l];
    }
    if (!any) break;
    double step = std::numeric_limits<double>::infinity();
    for (std::size_t l = 0; l < links; ++l) {
      if (unfrozen_on[l] > 0) step = std::min(step, std::max(headroom[l], 0.0) / unfrozen_on[l]);
    }
    for (std::size_t f = 0; f < paths.size(); ++f) {
      if (frozen[f]) continue;
      rate[f] += step;
      for (const int l : paths[f])
        headroom[l] -= step;
    }
    // Links with (numerically) no headroom left freeze every flow still rising through them.
    std::vector<bool> full(links, false);
    for (std::size_t l = 0; l < links; ++l) {
      full[l] = unfrozen_on[l] > 0 && headroom[l] <= 1e-12 * capacity[l];
    }
    for (std::size_t f = 0; f < paths.size(); ++f) {
      if (frozen[f]) continue;
      for (const int l : paths[f])
        frozen[f] = frozen[f] || full[l];
    }
  }
  return rate;
}

// Weighted form: flow f loads link paths[f][i] with weights[f][i] * its rate (a sprayed flow).
// Same "raise everyone by the smallest headroom" form: the step is the smallest headroom over the
// summed weights of the unfrozen flows on a link.
inline std::vector<double> brute_force_weighted_max_min(
    const std::vector<double>& capacity, const std::vector<std::vector<int>>& paths,
    const std::vector<std::vector<double>>& weights) {
  const std::size_t links = capacity.size();
  std::vector<double> rate(paths.size(), 0.0);
  std::vector<bool> frozen(paths.size(), false);
  std::vector<double> headroom = capacity;
  for (;;) {
    std::vector<double> demand(links, 0.0);
    bool any = false;
    for (std::size_t f = 0; f < paths.size(); ++f) {
      if (frozen[f]) continue;
      any = true;
      for (std::size_t i = 0; i < paths[f].size(); ++i)
        demand[paths[f][i]] += weights[f][i];
    }
    if (!any) break;
    double step = std::numeric_limits<double>::infinity();
    for (std::size_t l = 0; l < links; ++l) {
      if (demand[l] > 0) step = std::min(step, std::max(headroom[l], 0.0) / demand[l]);
    }
    for (std::size_t f = 0; f < paths.size(); ++f) {
      if (frozen[f]) continue;
      rate[f] += step;
      for (std::size_t i = 0; i < paths[f].size(); ++i)
        headroom[paths[f][i]] -= step * weights[f][i];
    }
    std::vector<bool> full(links, false);
    for (std::size_t l = 0; l < links; ++l)
      full[l] = demand[l] > 0 && headroom[l] <= 1e-12 * capacity[l];
    for (std::size_t f = 0; f < paths.size(); ++f) {
      if (frozen[f]) continue;
      for (const int l : paths[f])
        frozen[f] = frozen[f] || full[l];
    }
  }
  return rate;
}

}  // namespace stepsim::engine::testing
