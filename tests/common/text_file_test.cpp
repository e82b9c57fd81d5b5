// Reading configuration files as text (sim/common/text_file.hpp): what counts as binary data,
// and the messages for what is not a readable file.
#include "sim/common/text_file.hpp"

#include <gtest/gtest.h>
#include <filesystem>
#include <string>

#include "sim/common/input_error.hpp"

namespace stepsim::config {
namespace {

using namespace std::string_literals;

TEST(TextFile, TextIsUtf8WithTabsAndLineBreaks) {
  EXPECT_EQ(first_binary_byte("tp: 8\n\tpp: 2\r\n"), std::string_view::npos);
  EXPECT_EQ(first_binary_byte("name: \xC3\xA9t\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"),
            std::string_view::npos);  // 2-, 3- and 4-byte sequences
}

TEST(TextFile, BinaryIsANulAControlByteOrABrokenSequence) {
  EXPECT_EQ(first_binary_byte("ab\0c"s), 2u);
  EXPECT_EQ(first_binary_byte("ab\x07"), 2u);
  EXPECT_EQ(first_binary_byte("a\xC3("), 1u);     // a lead byte without its continuation
  EXPECT_EQ(first_binary_byte("a\xE2\x82"), 1u);  // cut short at the end
  EXPECT_EQ(first_binary_byte("\xFF"), 0u);       // never a lead byte
}

TEST(TextFile, MissingFilesAndDirectoriesAreNamedInTheMessage) {
  const auto dir = std::filesystem::temp_directory_path();
  try {
    read_text_file(dir, "s.yaml:2:11: topology: ");
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "s.yaml:2:11: topology: cannot read '" + dir.string() +
                                         "': it is a directory, not a file");
  }
  try {
    read_text_file(dir / "stepsim_no_such_file.yaml", "");
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("': no such file"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace stepsim::config
