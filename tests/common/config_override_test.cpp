// The `-o key.path=value` parser (sim/common/config_override.hpp): key paths with list indexes,
// and the messages for assignments it cannot apply.
#include "sim/common/config_override.hpp"

#include <gtest/gtest.h>
#include <string>
#include <vector>

#include "sim/common/input_error.hpp"

namespace stepsim::config {
namespace {

TEST(ConfigOverride, KeyPathsSplitAtDotsAndBrackets) {
  EXPECT_EQ(split_key_path("a.b[2].c"), (std::vector<std::string>{"a", "b", "2", "c"}));
  EXPECT_EQ(split_key_path("links.3.bandwidth"),
            (std::vector<std::string>{"links", "3", "bandwidth"}));
  EXPECT_TRUE(split_key_path("..[]").empty());
}

TEST(ConfigOverride, AnAssignmentNeedsAKey) {
  const auto [key, value] = split_override("parallelism.tp=8=9");
  EXPECT_EQ(key, "parallelism.tp");
  EXPECT_EQ(value, "8=9");
  try {
    split_override("=8");
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "-o '=8': expected KEY.PATH=VALUE, for example -o parallelism.tp=8");
  }
}

TEST(ConfigOverride, CreatesMapsAndRefusesToGoThroughAValue) {
  Value root;
  override_value(root, "parallelism.tp", "8");
  ASSERT_EQ(root.kind, Value::Kind::kMap);
  ASSERT_EQ(root.entries.size(), 1u);
  EXPECT_EQ(root.entries[0].value.entries[0].value.scalar, "8");
  try {
    override_value(root, "parallelism.tp.x", "1");
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "-o parallelism.tp.x=1: 'parallelism.tp' is a single value ('8'), it has no key 'x'");
  }
}

}  // namespace
}  // namespace stepsim::config
