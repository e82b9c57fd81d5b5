// The small CSV files that `stepsim traffic --flows` and `stepsim collective --matrix` read:
// comma-separated fields, blank lines and lines starting with '#' skipped, sizes with a unit or as
// a plain count of bytes.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "sim/common/units.hpp"

namespace stepsim::collectives::csv {

struct Line {
  int number = 0;                        // 1-based, in the file
  std::string_view text;                 // trimmed
  std::vector<std::string_view> fields;  // trimmed
};

// The data lines of `text` (views into it).
std::vector<Line> data_lines(std::string_view text);
// The whole file; InputError "<path>: cannot read the <what>" when it cannot be opened.
std::string read_file(const std::filesystem::path& path, std::string_view what);
// "64MiB" or "1048576" (bytes); InputError for anything else, or a count too large.
Bytes parse_size(std::string_view field);

}  // namespace stepsim::collectives::csv
