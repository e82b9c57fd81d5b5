#include "sim/engine/drain_time.hpp"

#include <gtest/gtest.h>
#include <cmath>
#include <cstdint>
#include <random>

namespace stepsim::engine::detail {
namespace {

// drain_ps as first written, with std::ceil: the rounding the reports were made with.
std::int64_t drain_ps_with_ceil(double bytes, double rate) {
  if (bytes <= 0.0) return 0;
  double ps = bytes / rate * kPsPerSecond;
  ps -= 1e-3 + ps * 1e-12;
  if (ps <= 0.0) return 0;
  if (ps >= kMaxDrainPs) return static_cast<std::int64_t>(kMaxDrainPs);
  return static_cast<std::int64_t>(std::ceil(ps));
}

TEST(DrainTime, RoundsUpToThePicosecondWithItsSlack) {
  // 1 MB at 1 GB/s: 1 ms exactly; the slack keeps a whole count whole.
  EXPECT_EQ(drain_ps(1e6, 1e9), 1'000'000'000);
  // A hair over a whole picosecond (beyond the slack) is the next one.
  EXPECT_EQ(drain_ps(1000.01, 1e12), 1001);
  EXPECT_EQ(drain_ps(0.0, 1e9), 0);
  EXPECT_EQ(drain_ps(-5.0, 1e9), 0);
  EXPECT_EQ(drain_ps(1e-9, 1e12), 0);  // under the 1e-3 ps slack
  EXPECT_EQ(drain_ps(1e30, 1.0), static_cast<std::int64_t>(kMaxDrainPs));
}

TEST(DrainTime, EqualsTheCeilingOnRandomAndEdgeValues) {
  // Sizes and rates over the ranges a simulation meets, and values of ps at and around whole
  // numbers up to 2^53 and beyond, where every double is whole.
  std::mt19937_64 rng(20261203);
  std::uniform_real_distribution<double> log_bytes(-3.0, 15.0);
  std::uniform_real_distribution<double> log_rate(3.0, 13.0);
  for (int i = 0; i < 1'000'000; ++i) {
    const double bytes = std::pow(10.0, log_bytes(rng));
    const double rate = std::pow(10.0, log_rate(rng));
    ASSERT_EQ(drain_ps(bytes, rate), drain_ps_with_ceil(bytes, rate)) << bytes << " " << rate;
  }
  for (double ps = 1.0; ps < 1e19; ps *= 1.7) {
    for (const double p : {ps, std::nextafter(ps, 0.0), std::nextafter(ps, 1e300), std::floor(ps),
                           std::floor(ps) + 0.5}) {
      const double bytes = p * 1e-12;  // at 1 byte/s: ps near p
      ASSERT_EQ(drain_ps(bytes, 1.0), drain_ps_with_ceil(bytes, 1.0)) << p;
    }
  }
}

}  // namespace
}  // namespace stepsim::engine::detail
