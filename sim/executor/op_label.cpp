#include "sim/executor/op_label.hpp"

#include <fmt/format.h>

namespace stepsim::executor {

std::string op_label(const workloads::Op& op) {
  std::string label;
  switch (op.phase) {
    case workloads::Phase::kForward:
      label = "fwd";
      break;
    case workloads::Phase::kBackward:
      label = "bwd";
      break;
    case workloads::Phase::kRecompute:
      label = "recompute";
      break;
    case workloads::Phase::kOptimizer:
      label = "opt";
      break;
  }
  if (op.layer != workloads::kNoLayer) label += fmt::format(" L{}", op.layer);
  label += ' ';
  label += workloads::to_string(op.name);
  if (op.micro_batch != workloads::kNoMicroBatch) label += fmt::format(" mb{}", op.micro_batch);
  return label;
}

}  // namespace stepsim::executor
