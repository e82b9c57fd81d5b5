// Writers of a model description (sim/app/model_description.hpp): the text of `stepsim model` and
// its `--json` (parameters, FLOPs per token of the forward pass and of training).
#pragma once

#include <iosfwd>
#include <nlohmann/json.hpp>

#include "sim/app/model_description.hpp"

namespace stepsim::app {

void write_model_text(std::ostream& out, const ModelDescription& description);

nlohmann::ordered_json model_json(const ModelDescription& description);

}  // namespace stepsim::app
