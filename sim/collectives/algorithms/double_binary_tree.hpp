// NCCL's double binary tree (src/graph/trees.cc): the parent of every rank in each of its two
// trees, shared by the `tree` and `nvls-tree` algorithms.
#pragma once

#include <cstdint>
#include <vector>

namespace stepsim::collectives {

inline constexpr std::int64_t kNoParent = -1;  // the root's parent

// Parent of every rank in NCCL's binary tree (ncclGetBtree): rank 0 is the root with a single
// child; a rank's parent is found by its lowest set bit.
std::vector<std::int64_t> btree_parents(std::int64_t n);

// Parents in tree `tree` (0 or 1) of NCCL's double binary tree over n ranks (ncclGetDtree): the
// second mirrors the first for even n and shifts it by one for odd n, so that most ranks are a
// leaf in one of them.
std::vector<std::int64_t> dtree_parents(std::int64_t n, int tree);

}  // namespace stepsim::collectives
