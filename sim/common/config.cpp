#include "sim/common/config.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <unordered_map>

#include "sim/common/input_error.hpp"

namespace stepsim::config {
namespace {

namespace fs = std::filesystem;

// Reads a whole text file, rejecting what is not one (missing, a directory, binary data).
std::string read_text_file(const fs::path& path, const std::string& context) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (ec || !fs::exists(status)) {
    // Not "no such file" for every error: a name too long, say, is not a missing file.
    const bool missing =
        !ec || ec == std::errc::no_such_file_or_directory || ec == std::errc::not_a_directory;
    throw InputError(fmt::format("{}cannot read '{}': {}", context, path.string(),
                                 missing ? "no such file" : ec.message()));
  }
  if (fs::is_directory(status)) {
    throw InputError(
        fmt::format("{}cannot read '{}': it is a directory, not a file", context, path.string()));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw InputError(fmt::format("{}cannot read '{}': permission denied or not a regular file",
                                 context, path.string()));
  }
  // Stops one chunk past the limit: a device such as /dev/zero never ends.
  constexpr std::size_t kLimit = std::size_t{64} << 20;
  std::string text;
  char chunk[1 << 16];
  while (text.size() <= kLimit && in.read(chunk, sizeof chunk).gcount() > 0)
    text.append(chunk, static_cast<std::size_t>(in.gcount()));
  if (text.size() > kLimit) {
    throw InputError(fmt::format("{}'{}' is larger than 64 MiB; this is not a configuration file",
                                 context, path.string()));
  }
  return text;
}

// Finds the first byte that makes `text` not UTF-8 text (a NUL, a control byte or a bad
// sequence); returns npos when it is text.
std::size_t first_binary_byte(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if (c < 0x20 && c != '\n' && c != '\r' && c != '\t') return i;
      ++i;
      continue;
    }
    int extra = (c & 0xE0) == 0xC0 ? 1 : (c & 0xF0) == 0xE0 ? 2 : (c & 0xF8) == 0xF0 ? 3 : -1;
    if (extra < 0) return i;
    for (int k = 1; k <= extra; ++k) {
      if (i + k >= text.size() || (static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80)
        return i;
    }
    i += extra + 1;
  }
  return std::string_view::npos;
}

// YAML forbids tabs in indentation and yaml-cpp's message does not say so; add a hint when the
// offending line (0-based) is indented with a tab.
std::string tab_hint(std::string_view text, int line) {
  std::size_t begin = 0;
  for (int l = 0; l < line && begin != std::string_view::npos; ++l) {
    begin = text.find('\n', begin);
    if (begin != std::string_view::npos) ++begin;
  }
  if (begin == std::string_view::npos) return "";
  for (std::size_t i = begin; i < text.size() && (text[i] == ' ' || text[i] == '\t'); ++i) {
    if (text[i] == '\t') return " (this line is indented with a tab; YAML allows only spaces)";
  }
  return "";
}

Mark to_mark(const YAML::Mark& m) {
  if (m.is_null()) return {};
  return {m.line + 1, m.column + 1};
}

class Converter {
 public:
  Converter(std::vector<fs::path>& files) : files_(files) {}

  Value load_file(const fs::path& path, const std::string& context) {
    std::error_code ec;  // a name too long, say: read_text_file says why
    fs::path canonical = fs::weakly_canonical(path, ec);
    if (ec) canonical = path.lexically_normal();
    if (std::find(stack_.begin(), stack_.end(), canonical) != stack_.end()) {
      std::string chain;
      for (const auto& p : stack_)
        chain += p.filename().string() + " -> ";
      throw InputError(
          fmt::format("{}include cycle: {}{}", context, chain, canonical.filename().string()));
    }
    const std::string text = read_text_file(path, context);
    files_.push_back(path);
    stack_.push_back(canonical);
    Value v = parse(text, path.string(), path.parent_path());
    stack_.pop_back();
    return v;
  }

  Value parse(std::string_view text, const std::string& origin_name, const fs::path& base_dir) {
    auto origin = std::make_shared<const std::string>(origin_name);
    if (const auto bad = first_binary_byte(text); bad != std::string_view::npos) {
      throw InputError(
          fmt::format("{}: this is not a YAML text file (byte {} is binary data, not UTF-8 text)",
                      origin_name, bad));
    }
    YAML::Node root;
    try {
      root = YAML::Load(std::string(text));
    } catch (const YAML::Exception& e) {
      throw InputError(fmt::format("{}:{}:{}: YAML syntax error: {}{}", origin_name,
                                   e.mark.line + 1, e.mark.column + 1, e.msg,
                                   tab_hint(text, e.mark.line)));
    }
    return convert(root, origin, base_dir, "");
  }

 private:
  Value convert(const YAML::Node& node, const std::shared_ptr<const std::string>& origin,
                const fs::path& base_dir, const std::string& path) {
    if (++count_ > Document::kMaxValues) {
      throw InputError(
          fmt::format("{}: more than {} values (after expanding aliases); refusing "
                      "an input this large",
                      *origin, Document::kMaxValues));
    }
    Value v;
    v.origin = origin;
    v.mark = to_mark(node.Mark());
    if (node.Tag() == "!include") {
      if (!node.IsScalar()) {
        throw InputError(fmt::format("{}:{}:{}: {}: !include takes a file path", *origin,
                                     v.mark.line, v.mark.column, path.empty() ? "(top)" : path));
      }
      const fs::path target = base_dir / node.Scalar();
      const std::string context = fmt::format("{}:{}:{}: {}: !include: ", *origin, v.mark.line,
                                              v.mark.column, path.empty() ? "(top)" : path);
      return load_file(target, context);
    }
    // "?" and "!" are no tag (plain and quoted); YAML's own tags (!!str) change nothing here. Any
    // other, a misspelt !include say, would be dropped without a word.
    if (const std::string& tag = node.Tag();
        tag != "?" && tag != "!" && !tag.empty() && !tag.starts_with("tag:yaml.org,2002:")) {
      throw InputError(
          fmt::format("{}:{}:{}: {}: unknown tag '{}'; the only one read here is "
                      "!include",
                      *origin, v.mark.line, v.mark.column, path.empty() ? "(top)" : path, tag));
    }
    switch (node.Type()) {
      case YAML::NodeType::Undefined:
      case YAML::NodeType::Null:
        v.kind = Value::Kind::kNull;
        break;
      case YAML::NodeType::Scalar:
        v.kind = Value::Kind::kScalar;
        v.scalar = node.Scalar();
        v.quoted = node.Tag() == "!";
        break;
      case YAML::NodeType::Sequence: {
        v.kind = Value::Kind::kSequence;
        std::size_t i = 0;
        for (const auto& item : node) {
          v.items.push_back(convert(item, origin, base_dir, fmt::format("{}[{}]", path, i++)));
        }
        break;
      }
      case YAML::NodeType::Map:
        v.kind = Value::Kind::kMap;
        std::unordered_map<std::string, int> lines;  // key -> the line it was first given at
        for (const auto& kv : node) {
          const Mark key_mark = to_mark(kv.first.Mark());
          if (!kv.first.IsScalar()) {
            throw InputError(
                fmt::format("{}:{}:{}: {}: a key must be a plain name, not a list or map", *origin,
                            key_mark.line, key_mark.column, path.empty() ? "(top)" : path));
          }
          const std::string key = kv.first.Scalar();
          const std::string child_path = path.empty() ? key : path + "." + key;
          // A set, not a scan of the entries: a map of a million keys must not take hours.
          if (const auto [first, added] = lines.emplace(key, key_mark.line); !added) {
            throw InputError(
                fmt::format("{}:{}:{}: {}: duplicate key '{}' (first given at line {})", *origin,
                            key_mark.line, key_mark.column, child_path, key, first->second));
          }
          v.entries.push_back({key, key_mark, convert(kv.second, origin, base_dir, child_path)});
        }
        break;
    }
    return v;
  }

  std::vector<fs::path>& files_;
  std::vector<fs::path> stack_;
  std::size_t count_ = 0;
};

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

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
  Converter converter(doc.files_);
  doc.root_ = converter.load_file(path, "");
  return doc;
}

Document Document::load_file(const fs::path& path, const Node& named_by) {
  Document doc;
  Converter converter(doc.files_);
  doc.root_ =
      converter.load_file(path, fmt::format("{}: {}: ", named_by.location(), named_by.path()));
  return doc;
}

Document Document::parse(std::string_view text, const std::string& origin,
                         const fs::path& base_dir) {
  Document doc;
  Converter converter(doc.files_);
  doc.root_ = converter.parse(text, origin, base_dir);
  return doc;
}

void Document::apply_override(std::string_view assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    throw InputError(fmt::format(
        "-o '{}': expected KEY.PATH=VALUE, for example -o parallelism.tp=8", assignment));
  }
  set(assignment.substr(0, eq), assignment.substr(eq + 1));
}

void Document::set(std::string_view dotted_path, std::string_view yaml_value) {
  const std::string origin_name = fmt::format("command line (-o {}={})", dotted_path, yaml_value);
  auto bad = [&](std::string_view why) {
    return InputError(fmt::format("-o {}={}: {}", dotted_path, yaml_value, why));
  };
  // Split "a.b[2].c" into segments; an index is a segment of digits.
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
  if (segments.empty()) throw bad("the key path is empty");

  Value replacement;
  {
    std::vector<fs::path> unused;
    Converter converter(unused);
    try {
      replacement = converter.parse(yaml_value, origin_name, ".");
    } catch (const InputError& e) {
      throw bad(fmt::format("the value is not valid YAML ({})", e.what()));
    }
  }
  auto origin = std::make_shared<const std::string>(origin_name);

  Value* node = &root_;
  std::string walked;
  for (std::size_t s = 0; s < segments.size(); ++s) {
    const std::string& seg = segments[s];
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

std::string closest_match(std::string_view word, const std::vector<std::string>& candidates) {
  const std::size_t limit = std::max<std::size_t>(2, word.size() / 3);
  std::string best;
  std::size_t best_distance = std::numeric_limits<std::size_t>::max();
  for (const auto& c : candidates) {
    // The distance is at least the difference in length: skip what cannot be close enough (a
    // value of millions of characters took seconds per candidate).
    const std::size_t length_gap =
        std::max(word.size(), c.size()) - std::min(word.size(), c.size());
    if (length_gap > limit) continue;
    const std::size_t d = edit_distance(word, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  return best_distance <= limit ? best : std::string();
}

}  // namespace stepsim::config
