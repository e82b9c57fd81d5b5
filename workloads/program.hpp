// The operations of one rank's training step in issue order, with their dependencies. A Program
// is shared by every rank of one pipeline stage (operations name groups and peers relative to
// the rank; see operation.hpp).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "workloads/operation.hpp"

namespace stepsim::workloads {

struct Program {
  std::vector<Op> ops;
  // Dependencies of all operations, back to back; each is the index of an earlier operation of
  // the same program (same rank).
  std::vector<std::uint32_t> deps;

  std::span<const std::uint32_t> deps_of(const Op& op) const {
    return {deps.data() + op.dep_begin, op.dep_count};
  }
  std::size_t memory_bytes() const {
    return ops.capacity() * sizeof(Op) + deps.capacity() * sizeof(std::uint32_t);
  }
};

}  // namespace stepsim::workloads
