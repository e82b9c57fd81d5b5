#include "sim/collectives/algorithms/algorithm_registry.hpp"

#include <fmt/format.h>
#include <stdexcept>

#include "sim/common/config.hpp"
#include "sim/common/input_error.hpp"

namespace stepsim::collectives {

void AlgorithmRegistry::add(std::string name, std::string summary, Factory factory) {
  if (entries_.contains(name))
    throw std::logic_error("AlgorithmRegistry: '" + name + "' registered twice (bug)");
  entries_.emplace(std::move(name), Entry{std::move(summary), std::move(factory)});
}

std::unique_ptr<Algorithm> AlgorithmRegistry::create(std::string_view name) const {
  const auto it = entries_.find(name);
  if (it == entries_.end()) {
    const std::string suggestion = config::closest_match(name, names());
    throw InputError(
        fmt::format("unknown collective algorithm '{}'{}; expected one of: {}", name,
                    suggestion.empty() ? "" : fmt::format(" (did you mean '{}'?)", suggestion),
                    fmt::join(names(), ", ")));
  }
  return it->second.factory(*this);
}

bool AlgorithmRegistry::contains(std::string_view name) const {
  return entries_.contains(name);
}

std::vector<std::string> AlgorithmRegistry::names() const {
  std::vector<std::string> result;
  for (const auto& [name, entry] : entries_)
    result.push_back(name);
  return result;
}

const std::string& AlgorithmRegistry::summary(std::string_view name) const {
  const auto it = entries_.find(name);
  if (it == entries_.end())
    throw std::logic_error("AlgorithmRegistry::summary: unknown name (bug)");
  return it->second.summary;
}

AlgorithmRegistry builtin_algorithms() {
  AlgorithmRegistry registry;
  register_ring_algorithms(registry);
  register_tree_algorithm(registry);
  register_halving_doubling_algorithm(registry);
  register_direct_algorithm(registry);
  register_hierarchical_algorithm(registry);
  register_in_switch_algorithm(registry);
  register_mesh_algorithm(registry);
  register_nvls_tree_algorithm(registry);
  register_collnet_algorithm(registry);
  register_pat_algorithm(registry);
  register_auto_algorithm(registry);
  return registry;
}

}  // namespace stepsim::collectives
