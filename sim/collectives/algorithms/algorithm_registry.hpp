// Collective algorithms by name: an open registry (name -> factory), so a new algorithm is one new
// file and one `add` call, never an edit of a central switch.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sim/collectives/algorithms/algorithm.hpp"

namespace stepsim::collectives {

class AlgorithmRegistry {
 public:
  // Makes an algorithm; it may look others up in the registry (hierarchical, auto).
  using Factory = std::function<std::unique_ptr<Algorithm>(const AlgorithmRegistry&)>;

  // Throws std::logic_error when the name is taken (a bug).
  void add(std::string name, std::string summary, Factory factory);
  // Throws InputError naming the unknown algorithm and the closest known name.
  std::unique_ptr<Algorithm> create(std::string_view name) const;
  bool contains(std::string_view name) const;
  std::vector<std::string> names() const;  // sorted
  const std::string& summary(std::string_view name) const;

 private:
  struct Entry {
    std::string summary;
    Factory factory;
  };
  std::map<std::string, Entry, std::less<>> entries_;
};

// Every algorithm stepsim ships: ring, ring-fluid, tree, halving-doubling, direct, hierarchical,
// in-switch, mesh, nvls-tree, auto.
AlgorithmRegistry builtin_algorithms();

// Registration functions, one per algorithm file.
void register_ring_algorithms(AlgorithmRegistry& registry);
void register_tree_algorithm(AlgorithmRegistry& registry);
void register_halving_doubling_algorithm(AlgorithmRegistry& registry);
void register_direct_algorithm(AlgorithmRegistry& registry);
void register_hierarchical_algorithm(AlgorithmRegistry& registry);
void register_in_switch_algorithm(AlgorithmRegistry& registry);
void register_mesh_algorithm(AlgorithmRegistry& registry);
void register_nvls_tree_algorithm(AlgorithmRegistry& registry);
void register_collnet_algorithm(AlgorithmRegistry& registry);
void register_pat_algorithm(AlgorithmRegistry& registry);
void register_auto_algorithm(AlgorithmRegistry& registry);

}  // namespace stepsim::collectives
