#include "sim/collectives/algorithms/double_binary_tree.hpp"

namespace stepsim::collectives {

std::vector<std::int64_t> btree_parents(std::int64_t n) {
  std::vector<std::int64_t> parent(static_cast<std::size_t>(n), kNoParent);
  for (std::int64_t rank = 1; rank < n; ++rank) {
    std::int64_t bit = 1;
    while (bit < n && (bit & rank) == 0)
      bit <<= 1;
    std::int64_t up = (rank ^ bit) | (bit << 1);
    if (up >= n) up = rank ^ bit;
    parent[static_cast<std::size_t>(rank)] = up;
  }
  return parent;
}

std::vector<std::int64_t> dtree_parents(std::int64_t n, int tree) {
  const auto p1 = btree_parents(n);
  if (tree == 0) return p1;
  std::vector<std::int64_t> parent(p1.size(), kNoParent);
  for (std::int64_t r = 0; r < n; ++r) {
    const std::int64_t g = n % 2 == 0 ? n - 1 - r : (r - 1 + n) % n;
    const std::int64_t u = p1[static_cast<std::size_t>(g)];
    parent[static_cast<std::size_t>(r)] =
        u == kNoParent ? kNoParent : (n % 2 == 0 ? n - 1 - u : (u + 1) % n);
  }
  return parent;
}

}  // namespace stepsim::collectives
