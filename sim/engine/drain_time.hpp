// Internal to the engine: how long bytes take to drain, in whole picoseconds, as the flow network
// (and the LevelRates prototype in sim/bench) round it.
#pragma once

#include <cmath>
#include <cstdint>

namespace stepsim::engine::detail {

inline constexpr double kSecondsPerPs = 1e-12;
inline constexpr double kPsPerSecond = 1e12;
// Drain ends are capped here (about 46 days), far beyond any step, to stay clear of overflow.
inline constexpr double kMaxDrainPs = 4e18;

// Time in whole picoseconds to drain `bytes` at `rate`, rounded up so that a flow never finishes
// before its bytes could drain. The slack (1e-3 ps plus a relative 1e-12) absorbs the rounding
// noise of the double arithmetic, so an exact drain end of 1000 ps computed as 1000.0000001 ps
// stays at 1000 ps instead of becoming a separate instant at 1001 ps.
inline std::int64_t drain_ps(double bytes, double rate) {
  if (bytes <= 0.0) return 0;
  double ps = bytes / rate * kPsPerSecond;
  ps -= 1e-3 + ps * 1e-12;
  if (ps <= 0.0) return 0;
  if (ps >= kMaxDrainPs) return static_cast<std::int64_t>(kMaxDrainPs);
  // std::ceil without the call into libm (it is one on x86-64 before SSE 4.1): 0 < ps < 2^63,
  // so the truncation is the floor, exact, and so is its conversion back.
  const auto floor_ps = static_cast<std::int64_t>(ps);
  return static_cast<double>(floor_ps) < ps ? floor_ps + 1 : floor_ps;
}

}  // namespace stepsim::engine::detail
