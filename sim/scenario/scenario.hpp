// A scenario: the YAML file a user writes to describe one simulation (a topology, a model, a
// parallel layout, training settings). Loading validates all of it before anything runs; every
// error names the file, line, column and key path.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "sim/common/config.hpp"

namespace stepsim {

struct Scenario {
  std::filesystem::path file;
  config::Document document;  // as read, includes expanded and overrides applied
  std::string name;           // `name:`, or the file's stem
  std::string description;
};

// Reads `file`, applies `overrides` ("key.path=value", in order) and validates every section.
// Throws InputError on any problem.
Scenario load_scenario(const std::filesystem::path& file,
                       const std::vector<std::string>& overrides);

}  // namespace stepsim
