// Where a use of stepsim takes its scenario from: a file, or YAML text (the Python module's
// strings and dicts), with `-o KEY.PATH=VALUE` overrides applied in order.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "sim/common/config.hpp"

namespace stepsim {
struct Scenario;
struct ServingScenario;
}  // namespace stepsim

namespace stepsim::app {

struct ScenarioSource {
  std::filesystem::path file;          // a scenario file; when empty, `text` is the scenario
  std::string text;                    // YAML (JSON is YAML)
  std::string origin = "<scenario>";   // how messages name `text`
  std::vector<std::string> overrides;  // KEY.PATH=VALUE, applied in order

  // How messages name the scenario: the file, or `origin`.
  std::string name() const { return file.empty() ? origin : file.string(); }
};

// The document of `source`, before its overrides (relative file names in text resolve against the
// current directory).
//   THROWS: InputError for a file that cannot be read or text that is not YAML.
config::Document scenario_document(const ScenarioSource& source);

// The training scenario of `source`, validated.
//   THROWS: InputError naming file, key and value for any problem.
Scenario load_training_scenario(const ScenarioSource& source);

// The serving scenario of `source` (a `serving:` section), validated.
//   THROWS: InputError naming file, key and value for any problem.
ServingScenario load_serving_scenario(const ScenarioSource& source);

// Whether `source` is a serving scenario (its root has a `serving:` key).
bool is_serving(const ScenarioSource& source);

}  // namespace stepsim::app
