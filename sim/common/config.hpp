// Configuration documents: YAML read into a tree that remembers, for every value, the file, line
// and column it came from, so that every error can say where it is and what was expected.
//
//  - `!include path/to/file.yaml` on any value replaces it by that file's content; the path is
//    relative to the including file. Cycles, missing files and directories are errors
//    (yaml_reader.hpp reads the YAML, text_file.hpp the files).
//  - `Document::set("parallelism.tp", "8")` overrides one value (the `-o key.path=value` option);
//    the value is read as YAML, intermediate maps are created, `name[3]` or `name.3` indexes a
//    list (config_override.hpp).
//  - `Node` is a read-only view with its key path ("parallelism.tp"). Typed getters validate and
//    throw InputError: "scenario.yaml:12:7: parallelism.tp: expected a positive integer, got '-1'".
//  - `Node::allow_keys` rejects unknown keys with a "did you mean" suggestion.
#pragma once

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

// closest_match (the "did you mean" of allow_keys and as_choice) is part of this interface: its
// callers name it config::closest_match.
#include "sim/common/closest_match.hpp"
#include "sim/common/units.hpp"

namespace stepsim::config {

struct Mark {
  int line = 0;  // 1-based; 0 when unknown (a value set from the command line)
  int column = 0;
};

// One YAML value and where it came from. Maps keep their keys in file order.
struct Value {
  enum class Kind { kNull, kScalar, kSequence, kMap };
  struct Entry;

  Kind kind = Kind::kNull;
  std::string scalar;                         // kScalar
  bool quoted = false;                        // the scalar was written in quotes
  std::vector<Value> items;                   // kSequence
  std::vector<Entry> entries;                 // kMap
  std::shared_ptr<const std::string> origin;  // file name, or "command line"
  Mark mark;
};

struct Value::Entry {
  std::string key;
  Mark key_mark;
  Value value;
};

class Node;

// A parsed configuration document with includes expanded.
class Document {
 public:
  // Reads `path` and every file it includes. Throws InputError for unreadable files, YAML syntax
  // errors, include problems and absurd inputs (more than kMaxValues values, e.g. alias bombs).
  static Document load_file(const std::filesystem::path& path);
  // The same for a file named by a value, such as `topology: pod.yaml`: a file that cannot be read
  // is reported at that value ("s.yaml:2:11: topology: cannot read 'pod.yaml': no such file").
  static Document load_file(const std::filesystem::path& path, const Node& named_by);
  // Parses YAML text; `origin` names it in messages; includes resolve relative to `base_dir`.
  static Document parse(std::string_view text, const std::string& origin,
                        const std::filesystem::path& base_dir = ".");

  // Applies one `key.path=value` override (value read as YAML). Throws InputError when the path
  // cannot be followed (for example through a scalar).
  void set(std::string_view dotted_path, std::string_view yaml_value);
  // Splits "key.path=value" and applies it.
  void apply_override(std::string_view assignment);

  Node root() const;
  // The files read, the main one first.
  const std::vector<std::filesystem::path>& files() const { return files_; }

  static constexpr std::size_t kMaxValues = 5'000'000;
  // Of them, at most this many added by expanding aliases (anchors reuse small blocks; a file whose
  // aliases add more is a "billion laughs" text).
  static constexpr std::size_t kMaxAliasValues = 1'000'000;

 private:
  Value root_;
  std::vector<std::filesystem::path> files_;
};

// A read-only view of one value with its key path. Cheap to copy; valid while the Document lives.
class Node {
 public:
  Node(const Value* value, std::string path) : value_(value), path_(std::move(path)) {}

  const std::string& path() const { return path_; }
  const Value& value() const { return *value_; }
  // "file.yaml:12:7" (or "command line"), for messages.
  std::string location() const;
  // The value as the user wrote it, for messages: the scalar text, "a map", "a list" or "nothing".
  std::string shown() const;

  bool is_null() const { return value_->kind == Value::Kind::kNull; }
  bool is_scalar() const { return value_->kind == Value::Kind::kScalar; }
  bool is_map() const { return value_->kind == Value::Kind::kMap; }
  bool is_sequence() const { return value_->kind == Value::Kind::kSequence; }

  // Map access. `at` requires the key; `find` returns nullopt when it is absent. Both require that
  // this node is a map.
  bool has(std::string_view key) const;
  Node at(std::string_view key) const;
  std::optional<Node> find(std::string_view key) const;
  std::vector<std::pair<std::string, Node>> entries() const;
  // Throws for a key not in `allowed`, suggesting the closest allowed one.
  void allow_keys(std::initializer_list<std::string_view> allowed) const;
  void allow_keys(const std::vector<std::string>& allowed) const;

  // Sequence access; requires that this node is a list.
  std::vector<Node> items() const;

  // Typed scalars. Each throws InputError naming this node when the value does not fit.
  std::string as_string() const;  // any scalar
  std::int64_t as_int(std::int64_t min = std::numeric_limits<std::int64_t>::min(),
                      std::int64_t max = std::numeric_limits<std::int64_t>::max()) const;
  double as_double(double min = -std::numeric_limits<double>::max(),
                   double max = std::numeric_limits<double>::max()) const;
  bool as_bool() const;
  Bytes as_bytes(Bytes min = Bytes(0)) const;
  BytesPerSecond as_bandwidth() const;  // strictly positive
  Time as_time() const;                 // zero or positive
  // A path, resolved relative to the directory of the file this value came from.
  std::filesystem::path as_path() const;
  // One of `choices`; the message lists them.
  std::string as_choice(std::initializer_list<std::string_view> choices) const;
  std::string as_choice(const std::vector<std::string>& choices) const;

  // Throws InputError: "<location>: <path>: expected <expected>, got '<shown>'".
  [[noreturn]] void fail(std::string_view expected) const;
  // Throws InputError: "<location>: <path>: <message>".
  [[noreturn]] void fail_with(std::string_view message) const;

 private:
  void require_map() const;
  Node child(const Value::Entry& entry) const;
  const Value* value_;
  std::string path_;
};

}  // namespace stepsim::config
