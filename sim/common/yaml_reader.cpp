#include "sim/common/yaml_reader.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>
#include <algorithm>
#include <unordered_map>

#include "sim/common/input_error.hpp"
#include "sim/common/text_file.hpp"

namespace stepsim::config {

namespace fs = std::filesystem;

namespace {

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

// Whether the document holds more than `limit` values once its aliases are expanded, counted
// before anything is built from it: a small file of nested aliases ("billion laughs") expands
// exponentially, and building the values first took seconds and a gigabyte before the limit
// refused it. Stops counting at the limit.
bool exceeds_values(const YAML::Node& node, std::size_t limit, std::size_t& count) {
  if (++count > limit) return true;
  if (node.IsSequence()) {
    for (const auto& item : node)
      if (exceeds_values(item, limit, count)) return true;
  } else if (node.IsMap()) {
    for (const auto& kv : node)
      if (exceeds_values(kv.second, limit, count)) return true;
  }
  return false;
}

InputError too_many_values(const std::string& origin) {
  return InputError(
      fmt::format("{}: more than {} values (after expanding aliases); refusing an input this large",
                  origin, Document::kMaxValues));
}

Mark to_mark(const YAML::Mark& m) {
  if (m.is_null()) return {};
  return {m.line + 1, m.column + 1};
}

}  // namespace

Value YamlReader::load_file(const fs::path& path, const std::string& context) {
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

Value YamlReader::parse(std::string_view text, const std::string& origin_name,
                        const fs::path& base_dir) {
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
    throw InputError(fmt::format("{}:{}:{}: YAML syntax error: {}{}", origin_name, e.mark.line + 1,
                                 e.mark.column + 1, e.msg, tab_hint(text, e.mark.line)));
  }
  std::size_t values = count_;
  if (exceeds_values(root, Document::kMaxValues, values)) throw too_many_values(*origin);
  return convert(root, origin, base_dir, "");
}

Value YamlReader::convert(const YAML::Node& node, const std::shared_ptr<const std::string>& origin,
                          const fs::path& base_dir, const std::string& path) {
  if (++count_ > Document::kMaxValues) throw too_many_values(*origin);
  Value v;
  v.origin = origin;
  v.mark = to_mark(node.Mark());
  if (node.Tag() == "!include") {
    if (!node.IsScalar()) {
      throw InputError(fmt::format("{}:{}:{}: {}: !include takes a file path", *origin, v.mark.line,
                                   v.mark.column, path.empty() ? "(top)" : path));
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
          throw InputError(fmt::format("{}:{}:{}: {}: duplicate key '{}' (first given at line {})",
                                       *origin, key_mark.line, key_mark.column, child_path, key,
                                       first->second));
        }
        v.entries.push_back({key, key_mark, convert(kv.second, origin, base_dir, child_path)});
      }
      break;
  }
  return v;
}

}  // namespace stepsim::config
