#include "sim/scenario/scenario.hpp"

#include "sim/common/input_error.hpp"

namespace stepsim {

Scenario load_scenario(const std::filesystem::path& file,
                       const std::vector<std::string>& overrides) {
  Scenario s{file, config::Document::load_file(file), file.stem().string(), ""};
  for (const auto& o : overrides)
    s.document.apply_override(o);

  const config::Node root = s.document.root();
  if (root.is_null())
    root.fail_with("the scenario is empty; it needs at least 'topology' and 'model'");
  if (!root.is_map()) root.fail("a map with the keys topology, model, parallelism, training");
  root.allow_keys({"name", "description", "topology", "model", "parallelism", "training", "compute",
                   "network"});
  root.at("topology");
  root.at("model");
  if (auto n = root.find("name")) s.name = n->as_string();
  if (auto n = root.find("description")) s.description = n->as_string();
  return s;
}

}  // namespace stepsim
