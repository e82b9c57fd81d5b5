// Reading a configuration file as text: the whole file, bounded (a device such as /dev/zero never
// ends), and checked to be UTF-8 text rather than binary data, so that a wrong file named by
// mistake gets a plain message instead of a YAML parser's confusion.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

namespace stepsim::config {

// The largest file read, in bytes (64 MiB): no configuration file comes near it.
inline constexpr std::size_t kMaxTextFileBytes = std::size_t{64} << 20;

// Reads the whole of `path`. Throws InputError, with `context` (a location and key, or empty) in
// front of the message, when it is missing, a directory, unreadable or larger than
// kMaxTextFileBytes.
std::string read_text_file(const std::filesystem::path& path, const std::string& context);

// The offset of the first byte that makes `text` not UTF-8 text (a NUL, a control byte other than
// tab, newline and carriage return, or an invalid sequence); npos when it is text.
std::size_t first_binary_byte(std::string_view text);

}  // namespace stepsim::config
