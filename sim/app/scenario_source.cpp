#include "sim/app/scenario_source.hpp"

#include "sim/scenario/scenario.hpp"
#include "sim/scenario/serving_scenario.hpp"

namespace stepsim::app {

config::Document scenario_document(const ScenarioSource& source) {
  if (!source.file.empty()) return config::Document::load_file(source.file);
  return config::Document::parse(source.text, source.origin, std::filesystem::current_path());
}

Scenario load_training_scenario(const ScenarioSource& source) {
  // From a file, the file's own loader: it records the file and names the scenario by its stem.
  if (!source.file.empty()) return load_scenario(source.file, source.overrides);
  return load_scenario(scenario_document(source), "scenario", source.overrides);
}

ServingScenario load_serving_scenario(const ScenarioSource& source) {
  if (!source.file.empty()) return stepsim::load_serving_scenario(source.file, source.overrides);
  return stepsim::load_serving_scenario(scenario_document(source), "scenario", source.overrides);
}

bool is_serving(const ScenarioSource& source) {
  const config::Document document = scenario_document(source);
  const config::Node root = document.root();
  return root.is_map() && root.has("serving");
}

}  // namespace stepsim::app
