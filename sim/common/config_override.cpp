#include "sim/common/config_override.hpp"

#include <fmt/format.h>
#include <charconv>
#include <filesystem>
#include <memory>

#include "sim/common/input_error.hpp"
#include "sim/common/yaml_reader.hpp"

namespace stepsim::config {

std::vector<std::string> split_key_path(std::string_view dotted_path) {
  // An index is a segment of digits, so "[" and "]" separate segments as "." does.
  std::vector<std::string> segments;
  std::string current;
  for (char c : dotted_path) {
    if (c == '.' || c == '[' || c == ']') {
      if (!current.empty()) segments.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  if (!current.empty()) segments.push_back(current);
  return segments;
}

void override_value(Value& root, std::string_view dotted_path, std::string_view yaml_value) {
  const std::string origin_name = fmt::format("command line (-o {}={})", dotted_path, yaml_value);
  auto bad = [&](std::string_view why) {
    return InputError(fmt::format("-o {}={}: {}", dotted_path, yaml_value, why));
  };
  const std::vector<std::string> segments = split_key_path(dotted_path);
  if (segments.empty()) throw bad("the key path is empty");

  Value replacement;
  {
    std::vector<std::filesystem::path> unused;
    YamlReader reader(unused);
    try {
      replacement = reader.parse(yaml_value, origin_name, ".");
    } catch (const InputError& e) {
      throw bad(fmt::format("the value is not valid YAML ({})", e.what()));
    }
  }
  auto origin = std::make_shared<const std::string>(origin_name);

  Value* node = &root;
  std::string walked;
  for (const std::string& seg : segments) {
    if (node->kind == Value::Kind::kNull) {
      node->kind = Value::Kind::kMap;
      node->origin = origin;
    }
    Value* next = nullptr;
    if (node->kind == Value::Kind::kMap) {
      for (auto& e : node->entries) {
        if (e.key == seg) next = &e.value;
      }
      if (next == nullptr) {
        node->entries.push_back({seg, Mark{}, Value{}});
        next = &node->entries.back().value;
        next->origin = origin;
      }
    } else if (node->kind == Value::Kind::kSequence) {
      std::size_t index = 0;
      const auto [p, ec] = std::from_chars(seg.data(), seg.data() + seg.size(), index);
      if (ec != std::errc() || p != seg.data() + seg.size() || index >= node->items.size()) {
        throw bad(fmt::format("'{}' is a list of {} items; '{}' is not an index into it",
                              walked.empty() ? "(top)" : walked, node->items.size(), seg));
      }
      next = &node->items[index];
    } else {
      throw bad(fmt::format("'{}' is a single value ('{}'), it has no key '{}'",
                            walked.empty() ? "(top)" : walked, node->scalar, seg));
    }
    walked += (walked.empty() ? "" : ".") + seg;
    node = next;
  }
  *node = std::move(replacement);
}

std::pair<std::string_view, std::string_view> split_override(std::string_view assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    throw InputError(fmt::format(
        "-o '{}': expected KEY.PATH=VALUE, for example -o parallelism.tp=8", assignment));
  }
  return {assignment.substr(0, eq), assignment.substr(eq + 1)};
}

}  // namespace stepsim::config
