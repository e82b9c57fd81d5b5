// Short human names for operations, as the trace and error messages show them:
// "fwd L3 qkv mb2", "bwd L3 tp-allreduce mb2", "optimizer-step".
#pragma once

#include <string>

#include "workloads/operation.hpp"

namespace stepsim::executor {

std::string op_label(const workloads::Op& op);

}  // namespace stepsim::executor
