// Overrides of single configuration values, as the command line's `-o key.path=value` gives
// them: the value is read as YAML and replaces what the path leads to; maps along the path are
// created where missing; `name[3]` or `name.3` indexes an existing list.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/common/config.hpp"

namespace stepsim::config {

// The segments of a key path: "a.b[2].c" -> a, b, 2, c (empty segments dropped).
std::vector<std::string> split_key_path(std::string_view dotted_path);

// Replaces the value at `dotted_path` under `root` by `yaml_value` read as YAML. Throws
// InputError ("-o <path>=<value>: <why>") when the path is empty, the value is not YAML, or the
// path goes through a single value or past the end of a list.
void override_value(Value& root, std::string_view dotted_path, std::string_view yaml_value);

// Splits "key.path=value" at the first '='. Throws InputError when there is no key.
std::pair<std::string_view, std::string_view> split_override(std::string_view assignment);

}  // namespace stepsim::config
