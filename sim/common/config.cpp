#include "sim/common/config.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <charconv>
#include <cmath>

#include "sim/common/config_override.hpp"
#include "sim/common/input_error.hpp"
#include "sim/common/yaml_reader.hpp"

namespace stepsim::config {
namespace {

namespace fs = std::filesystem;

std::string join(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) {
    if (!out.empty()) out += ", ";
    out += w;
  }
  return out;
}

std::string int_range_text(std::int64_t min, std::int64_t max) {
  constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
  constexpr auto kMin = std::numeric_limits<std::int64_t>::min();
  if (min == 1 && max == kMax) return "a positive integer";
  if (min == 0 && max == kMax) return "a non-negative integer";
  if (min == kMin && max == kMax) return "an integer";
  if (max == kMax) return fmt::format("an integer of at least {}", min);
  return fmt::format("an integer from {} to {}", min, max);
}

}  // namespace

// ---- Document ---------------------------------------------------------------------------------

Document Document::load_file(const fs::path& path) {
  Document doc;
  YamlReader reader(doc.files_);
  doc.root_ = reader.load_file(path, "");
  return doc;
}

Document Document::load_file(const fs::path& path, const Node& named_by) {
  Document doc;
  YamlReader reader(doc.files_);
  doc.root_ = reader.load_file(path, fmt::format("{}: {}: ", named_by.location(), named_by.path()));
  return doc;
}

Document Document::parse(std::string_view text, const std::string& origin,
                         const fs::path& base_dir) {
  Document doc;
  YamlReader reader(doc.files_);
  doc.root_ = reader.parse(text, origin, base_dir);
  return doc;
}

void Document::apply_override(std::string_view assignment) {
  const auto [dotted_path, yaml_value] = split_override(assignment);
  set(dotted_path, yaml_value);
}

void Document::set(std::string_view dotted_path, std::string_view yaml_value) {
  override_value(root_, dotted_path, yaml_value);
}

Node Document::root() const {
  return Node(&root_, "");
}

// ---- Node -------------------------------------------------------------------------------------

std::string Node::location() const {
  const std::string origin = value_->origin ? *value_->origin : std::string("<input>");
  if (value_->mark.line == 0) return origin;
  return fmt::format("{}:{}:{}", origin, value_->mark.line, value_->mark.column);
}

std::string Node::shown() const {
  switch (value_->kind) {
    case Value::Kind::kNull:
      return "nothing";
    case Value::Kind::kScalar:
      return "'" +
             (value_->scalar.size() > 80 ? value_->scalar.substr(0, 77) + "..." : value_->scalar) +
             "'";
    case Value::Kind::kSequence:
      return "a list";
    case Value::Kind::kMap:
      return "a map";
  }
  return "?";
}

void Node::fail(std::string_view expected) const {
  throw InputError(fmt::format("{}: {}: expected {}, got {}", location(),
                               path_.empty() ? "(top level)" : path_, expected, shown()));
}

void Node::fail_with(std::string_view message) const {
  throw InputError(
      fmt::format("{}: {}: {}", location(), path_.empty() ? "(top level)" : path_, message));
}

void Node::require_map() const {
  if (!is_map()) fail("a map of keys and values");
}

Node Node::child(const Value::Entry& entry) const {
  return Node(&entry.value, path_.empty() ? entry.key : path_ + "." + entry.key);
}

bool Node::has(std::string_view key) const {
  return find(key).has_value();
}

std::optional<Node> Node::find(std::string_view key) const {
  require_map();
  for (const auto& e : value_->entries) {
    if (e.key == key) return child(e);
  }
  return std::nullopt;
}

Node Node::at(std::string_view key) const {
  if (auto n = find(key)) return *n;
  const std::string full = path_.empty() ? std::string(key) : path_ + "." + std::string(key);
  throw InputError(fmt::format("{}: {}: missing required key '{}'", location(), full, key));
}

std::vector<std::pair<std::string, Node>> Node::entries() const {
  require_map();
  std::vector<std::pair<std::string, Node>> out;
  out.reserve(value_->entries.size());
  for (const auto& e : value_->entries)
    out.emplace_back(e.key, child(e));
  return out;
}

void Node::allow_keys(std::initializer_list<std::string_view> allowed) const {
  allow_keys(std::vector<std::string>(allowed.begin(), allowed.end()));
}

void Node::allow_keys(const std::vector<std::string>& allowed) const {
  require_map();
  for (const auto& e : value_->entries) {
    if (std::find(allowed.begin(), allowed.end(), e.key) != allowed.end()) continue;
    const std::string full = path_.empty() ? e.key : path_ + "." + e.key;
    const std::string origin = e.value.origin ? *e.value.origin : std::string("<input>");
    const std::string where =
        e.key_mark.line > 0 ? fmt::format("{}:{}:{}", origin, e.key_mark.line, e.key_mark.column)
                            : origin;
    const std::string suggestion = closest_match(e.key, allowed);
    throw InputError(fmt::format(
        "{}: {}: unknown key '{}'{}; allowed keys here: {}", where, full, e.key,
        suggestion.empty() ? "" : fmt::format(" (did you mean '{}'?)", suggestion), join(allowed)));
  }
}

std::vector<Node> Node::items() const {
  if (!is_sequence()) fail("a list");
  std::vector<Node> out;
  out.reserve(value_->items.size());
  for (std::size_t i = 0; i < value_->items.size(); ++i) {
    out.emplace_back(&value_->items[i], fmt::format("{}[{}]", path_, i));
  }
  return out;
}

std::string Node::as_string() const {
  if (!is_scalar()) fail("a single value (text)");
  return value_->scalar;
}

std::int64_t Node::as_int(std::int64_t min, std::int64_t max) const {
  const std::string expected = int_range_text(min, max);
  if (!is_scalar()) fail(expected);
  std::string_view s = value_->scalar;
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  std::int64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc::result_out_of_range) fail(expected + " (this one is too large)");
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) fail(expected);
  if (v < min || v > max) fail(expected);
  return v;
}

double Node::as_double(double min, double max) const {
  std::string expected = "a number";
  if (min > -std::numeric_limits<double>::max() && max < std::numeric_limits<double>::max()) {
    expected = fmt::format("a number from {} to {}", min, max);
  } else if (min > -std::numeric_limits<double>::max()) {
    expected = fmt::format("a number of at least {}", min);
  }
  if (!is_scalar()) fail(expected);
  std::string_view s = value_->scalar;
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  double v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty() || !std::isfinite(v))
    fail(expected);
  if (v < min || v > max) fail(expected);
  return v;
}

bool Node::as_bool() const {
  if (is_scalar()) {
    const std::string& s = value_->scalar;
    if (s == "true") return true;
    if (s == "false") return false;
  }
  fail("true or false");
}

Bytes Node::as_bytes(Bytes min) const {
  if (!is_scalar()) fail("a size with a unit, like 25MiB");
  Bytes b;
  try {
    b = parse_bytes(value_->scalar);
  } catch (const InputError& e) {
    fail_with(e.what());
  }
  if (b < min) fail(fmt::format("a size of at least {}", format_bytes(min)));
  return b;
}

BytesPerSecond Node::as_bandwidth() const {
  if (!is_scalar()) fail("a bandwidth with a unit, like 400Gbps or 50GB/s");
  BytesPerSecond r;
  try {
    r = parse_bandwidth(value_->scalar);
  } catch (const InputError& e) {
    fail_with(e.what());
  }
  if (!(r.value() > 0)) fail("a positive bandwidth");
  return r;
}

Time Node::as_time() const {
  if (!is_scalar()) fail("a time with a unit, like 1.5us");
  try {
    return parse_time(value_->scalar);
  } catch (const InputError& e) {
    fail_with(e.what());
  }
}

std::filesystem::path Node::as_path() const {
  const std::string s = as_string();
  if (s.empty()) fail("a file path");
  const fs::path p(s);
  if (p.is_absolute() || !value_->origin || value_->mark.line == 0) return p;
  // A value given on the command line (-o) is relative to the current directory, as every other
  // path a user types there; its origin names the override, not a file.
  if (value_->origin->starts_with("command line")) return p;
  return fs::path(*value_->origin).parent_path() / p;
}

std::string Node::as_choice(std::initializer_list<std::string_view> choices) const {
  return as_choice(std::vector<std::string>(choices.begin(), choices.end()));
}

std::string Node::as_choice(const std::vector<std::string>& choices) const {
  const std::string expected = "one of " + join(choices);
  if (!is_scalar()) fail(expected);
  if (std::find(choices.begin(), choices.end(), value_->scalar) != choices.end())
    return value_->scalar;
  const std::string suggestion = closest_match(value_->scalar, choices);
  if (!suggestion.empty()) fail(fmt::format("{} (did you mean '{}'?)", expected, suggestion));
  fail(expected);
}

}  // namespace stepsim::config
