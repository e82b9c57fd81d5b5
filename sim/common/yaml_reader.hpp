// Reads YAML text into configuration Values (config.hpp) that remember, for every value, the file,
// line and column it came from. Expands `!include path` (relative to the including file; cycles
// are errors), rejects binary files, unknown tags, keys that are not plain names, duplicate keys
// and inputs of more than Document::kMaxValues values (alias bombs). Every error is an InputError
// that says where.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sim/common/config.hpp"

namespace YAML {
class Node;
}

namespace stepsim::config {

class YamlReader {
 public:
  // Appends every file read to `files`, which must outlive the reader.
  explicit YamlReader(std::vector<std::filesystem::path>& files) : files_(files) {}

  // Reads the file at `path`; `context` (a location and key, or empty) prefixes the message when
  // it cannot be read.
  Value load_file(const std::filesystem::path& path, const std::string& context);
  // Parses `text`, named `origin_name` in messages; includes resolve relative to `base_dir`.
  Value parse(std::string_view text, const std::string& origin_name,
              const std::filesystem::path& base_dir);

 private:
  Value convert(const YAML::Node& node, const std::shared_ptr<const std::string>& origin,
                const std::filesystem::path& base_dir, const std::string& path);

  std::vector<std::filesystem::path>& files_;
  std::vector<std::filesystem::path> stack_;  // the files being read, outermost first
  std::size_t count_ = 0;                     // values converted so far
};

}  // namespace stepsim::config
