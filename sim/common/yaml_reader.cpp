#include "sim/common/yaml_reader.hpp"

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>
#include <algorithm>
#include <cstdint>
#include <optional>
#include <sstream>
#include <unordered_map>
#include <vector>

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

// Counts the values of a document's first node as they would be once its aliases are expanded
// (every node: maps, sequences, scalars and nulls, a map's values but not its keys), from the
// parser's events and before anything is built from it, in time linear in the text: an alias
// adds the size of the node its anchor names. A small file of nested aliases ("billion laughs")
// expands exponentially; walking the expanded tree to count it took 0.3 s for the 5 million
// values of the limit (2.6 s under ASan), and an alias inside the node it names has no expansion
// at all (walking it overflowed the stack). Counts stop growing at `cap`.
class ExpandedCount final : public YAML::EventHandler {
 public:
  explicit ExpandedCount(std::uint64_t cap) : cap_(cap) {}
  std::uint64_t total() const { return total_; }
  // The values written in the text (each node once, aliases not expanded).
  std::uint64_t written() const { return written_; }
  // Where an alias names a node that contains it, if one does.
  const std::optional<YAML::Mark>& recursive_alias() const { return recursive_; }

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t anchor) override { leaf(anchor); }
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t anchor,
                const std::string&) override {
    leaf(anchor);
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    const auto it = sizes_.find(anchor);
    if (it == sizes_.end()) {  // its node is still open: the alias is inside it
      if (!recursive_) recursive_ = mark;
      child(1);
      return;
    }
    child(it->second);
  }
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    frames_.push_back({anchor, false});
  }
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    frames_.push_back({anchor, true});
  }
  void OnSequenceEnd() override { close(); }
  void OnMapEnd() override { close(); }

 private:
  struct Frame {
    YAML::anchor_t anchor;
    bool map;
    std::uint64_t children = 0;
    std::uint64_t size = 1;  // the node itself
  };
  void leaf(YAML::anchor_t anchor) {
    ++written_;
    if (anchor != YAML::NullAnchor) sizes_[anchor] = 1;
    child(1);
  }
  void close() {
    ++written_;
    const Frame f = frames_.back();
    frames_.pop_back();
    if (f.anchor != YAML::NullAnchor) sizes_[f.anchor] = f.size;
    child(f.size);
  }
  void child(std::uint64_t size) {
    if (frames_.empty()) {
      total_ = std::min(cap_, total_ + size);
      return;
    }
    Frame& f = frames_.back();
    const bool key = f.map && f.children % 2 == 0;
    ++f.children;
    if (!key) f.size = std::min(cap_, f.size + size);
  }

  std::uint64_t cap_;
  std::uint64_t total_ = 0;
  std::uint64_t written_ = 0;
  std::vector<Frame> frames_;
  std::unordered_map<YAML::anchor_t, std::uint64_t> sizes_;
  std::optional<YAML::Mark> recursive_;
};

InputError too_many_alias_values(const std::string& origin, std::uint64_t added) {
  return InputError(fmt::format(
      "{}: its aliases expand to {}{} more values than the text writes (at most {}); refusing "
      "an input this large",
      origin, added > Document::kMaxValues ? "over " : "",
      std::min<std::uint64_t>(added, Document::kMaxValues), Document::kMaxAliasValues));
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
    // Sized from the parser's events before anything is built (ExpandedCount).
    std::istringstream in{std::string(text)};
    YAML::Parser parser(in);
    ExpandedCount count(std::uint64_t{Document::kMaxValues} + 1);
    parser.HandleNextDocument(count);
    if (const auto& mark = count.recursive_alias())
      throw InputError(fmt::format(
          "{}:{}:{}: this alias names a node that contains it; its expansion would never end",
          origin_name, mark->line + 1, mark->column + 1));
    if (count_ + count.total() > Document::kMaxValues) throw too_many_values(*origin);
    // Aliases that multiply a small text into a large tree ("billion laughs" under the limit
    // above: 1.7 million values built from 9 lines took 0.6 s and 370 MB, 6 s and 900 MB under
    // ASan) are refused before building; a file that writes its values out is held to the limit
    // above only.
    if (count.total() > count.written() &&
        count.total() - count.written() > Document::kMaxAliasValues)
      throw too_many_alias_values(*origin, count.total() - count.written());
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    throw InputError(fmt::format("{}:{}:{}: YAML syntax error: {}{}", origin_name, e.mark.line + 1,
                                 e.mark.column + 1, e.msg, tab_hint(text, e.mark.line)));
  }
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
