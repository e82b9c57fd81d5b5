#include "sim/common/text_file.hpp"

#include <fmt/format.h>
#include <fstream>

#include "sim/common/input_error.hpp"

namespace stepsim::config {

namespace fs = std::filesystem;

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
  std::string text;
  char chunk[1 << 16];
  while (text.size() <= kMaxTextFileBytes && in.read(chunk, sizeof chunk).gcount() > 0)
    text.append(chunk, static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxTextFileBytes) {
    throw InputError(fmt::format("{}'{}' is larger than 64 MiB; this is not a configuration file",
                                 context, path.string()));
  }
  return text;
}

std::size_t first_binary_byte(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if (c < 0x20 && c != '\n' && c != '\r' && c != '\t') return i;
      ++i;
      continue;
    }
    // The lead byte says how many continuation bytes (10xxxxxx) follow.
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

}  // namespace stepsim::config
