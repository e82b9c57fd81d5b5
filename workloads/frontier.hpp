// What the next operation of a generated step waits for (step generator).
#pragma once

#include "workloads/op_graph_builder.hpp"

namespace stepsim::workloads {

// Up to two operations whose completion the next operation needs: `main`, on the path of the
// activation (or its gradient), and `side`, one that ran beside it (the shared experts, a GEMM
// overlapped with its communication, the step's first parameter gather). kNoOp: none.
struct Frontier {
  OpIndex main = kNoOp;
  OpIndex side = kNoOp;
};

}  // namespace stepsim::workloads
