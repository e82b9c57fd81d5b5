#include "sim/engine/inline_function.hpp"

#include <gtest/gtest.h>
#include <array>
#include <memory>

namespace stepsim::engine {
namespace {

TEST(InlineFunction, CallsSmallTrivialCallable) {
  int calls = 0;
  InlineFunction<int(int)> f = [&calls](int x) {
    ++calls;
    return 2 * x;
  };
  EXPECT_EQ(f(21), 42);  // 2 * 21
  InlineFunction<int(int)> g = std::move(f);
  EXPECT_FALSE(static_cast<bool>(f));
  EXPECT_EQ(g(5), 10);
  EXPECT_EQ(calls, 2);
}

TEST(InlineFunction, DestroysNonTrivialCaptureExactlyOnce) {
  auto token = std::make_shared<int>(7);
  {
    InlineFunction<int()> f = [token] { return *token; };
    EXPECT_EQ(token.use_count(), 2);  // the capture holds the second reference
    InlineFunction<int()> g = std::move(f);
    EXPECT_EQ(token.use_count(), 2);  // moved, not copied
    EXPECT_EQ(g(), 7);
  }
  EXPECT_EQ(token.use_count(), 1);  // destroyed with g
}

TEST(InlineFunction, LargeCaptureGoesToTheHeapAndStillWorks) {
  std::array<std::int64_t, 32> big{};  // 256 bytes, more than the 48-byte buffer
  big[31] = 99;
  auto token = std::make_shared<int>(0);
  InlineFunction<std::int64_t()> f = [big, token] { return big[31]; };
  EXPECT_EQ(token.use_count(), 2);
  InlineFunction<std::int64_t()> g = std::move(f);
  EXPECT_EQ(g(), 99);
  g.reset();
  EXPECT_EQ(token.use_count(), 1);
}

}  // namespace
}  // namespace stepsim::engine
