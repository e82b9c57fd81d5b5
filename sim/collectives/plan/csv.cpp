#include "sim/collectives/plan/csv.hpp"

#include <fmt/format.h>
#include <charconv>
#include <fstream>

#include "sim/common/input_error.hpp"

namespace stepsim::collectives::csv {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

}  // namespace

std::vector<Line> data_lines(std::string_view text) {
  std::vector<Line> lines;
  std::size_t pos = 0;
  int number = 0;
  while (pos < text.size()) {
    const std::size_t end = std::min(text.find('\n', pos), text.size());
    const std::string_view line = trim(text.substr(pos, end - pos));
    pos = end + 1;
    ++number;
    if (line.empty() || line.front() == '#') continue;
    Line out{number, line, {}};
    for (std::size_t start = 0;;) {
      const std::size_t comma = line.find(',', start);
      out.fields.push_back(trim(line.substr(start, comma - start)));
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    lines.push_back(std::move(out));
  }
  return lines;
}

std::string read_file(const std::filesystem::path& path, std::string_view what) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw InputError(
        fmt::format("{}: cannot read the {}: it is a directory, not a file", path.string(), what));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot read the {}", path.string(), what));
  // Stops one chunk past the limit: a device such as /dev/zero never ends.
  constexpr std::size_t kLimit = std::size_t{64} << 20;
  std::string text;
  char chunk[1 << 16];
  while (text.size() <= kLimit && in.read(chunk, sizeof chunk).gcount() > 0)
    text.append(chunk, static_cast<std::size_t>(in.gcount()));
  if (text.size() > kLimit)
    throw InputError(fmt::format("{}: the {} is larger than 64 MiB", path.string(), what));
  return text;
}

Bytes parse_size(std::string_view field) {
  if (!field.empty() && field.find_first_not_of("0123456789") == std::string_view::npos) {
    std::int64_t count = 0;
    const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), count);
    if (ec != std::errc() || end != field.data() + field.size())
      throw InputError("too large a count of bytes");
    return Bytes(count);
  }
  return parse_bytes(field);
}

}  // namespace stepsim::collectives::csv
