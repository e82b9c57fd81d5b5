// `describe_model`: a model's shape, parameter count and FLOPs per token (a preset or a model
// YAML file; workloads/model.hpp). The use behind `stepsim model`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "workloads/model.hpp"

namespace stepsim::app {

struct ModelDescription {
  workloads::ModelSpec model;
  workloads::ParameterCount parameters;
  workloads::TokenFlops forward;  // FLOPs per token of the forward pass at seq_len
  std::int64_t seq_len = 0;       // tokens, for the attention FLOPs
};

// Describes `model`: a preset name, or a model YAML file (a name ending in .yaml or .yml).
//   THROWS: InputError for an empty name, an unknown preset or a bad file (file, key, value).
ModelDescription describe_model(const std::string& model, std::int64_t seq_len);

// One line per model preset: name, parameters (billions) and the source it comes from.
std::vector<std::string> model_presets();

}  // namespace stepsim::app
