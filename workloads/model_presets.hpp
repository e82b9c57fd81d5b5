// Named models with the shapes of their published configurations. Each preset's `source` names the
// config.json or paper its figures come from; docs/workloads.md lists them with their parameter
// counts.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "workloads/model.hpp"

namespace stepsim::workloads {

// The preset called `name`, or nullopt.
std::optional<ModelSpec> find_model_preset(std::string_view name);
// Every preset name, in a fixed order.
std::vector<std::string> model_preset_names();

}  // namespace stepsim::workloads
