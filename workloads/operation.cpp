#include "workloads/operation.hpp"

#include <array>
#include <cstddef>

namespace stepsim::workloads {

namespace {

template <std::size_t N, typename E>
std::string_view lookup(const std::array<std::string_view, N>& names, E v) {
  const auto i = static_cast<std::size_t>(v);
  return i < N ? names[i] : std::string_view("?");
}

}  // namespace

std::string_view to_string(OpKind v) {
  static constexpr std::array<std::string_view, 4> kNames = {"compute", "collective", "send",
                                                             "recv"};
  return lookup(kNames, v);
}

std::string_view to_string(Stream v) {
  static constexpr std::array<std::string_view, 10> kNames = {
      "compute", "tp", "cp", "cp-recv", "ep", "pp", "pp-recv", "dp", "pp-rev", "pp-rev-recv"};
  return lookup(kNames, v);
}

std::string_view to_string(ParallelDim v) {
  static constexpr std::array<std::string_view, kParallelDimCount> kNames = {
      "none", "tp", "sp", "cp", "ep", "pp", "dp"};
  return lookup(kNames, v);
}

std::string_view to_string(Communicator v) {
  static constexpr std::array<std::string_view, 6> kNames = {"tensor", "context",     "expert",
                                                             "data",   "expert-data", "pipeline"};
  return lookup(kNames, v);
}

std::string_view to_string(Phase v) {
  static constexpr std::array<std::string_view, 4> kNames = {"fwd", "bwd", "recompute",
                                                             "optimizer"};
  return lookup(kNames, v);
}

std::string_view to_string(OpName v) {
  static constexpr std::array<std::string_view, 24> kNames = {
      "embedding",      "norm",           "qkv",          "attention_core",
      "attention_out",  "mlp_up",         "mlp_down",     "router",
      "experts",        "shared_experts", "logits",       "loss",
      "optimizer_step", "tp_allreduce",   "sp_allgather", "sp_reducescatter",
      "cp_kv_exchange", "cp_alltoall",    "ep_dispatch",  "ep_combine",
      "pp_activation",  "pp_gradient",    "dp_gradients", "zero_param_gather"};
  return lookup(kNames, v);
}

std::string_view to_string(ComputeKind v) {
  static constexpr std::array<std::string_view, 5> kNames = {"gemm", "grouped_gemm", "attention",
                                                             "elementwise", "optimizer"};
  return lookup(kNames, v);
}

}  // namespace stepsim::workloads
