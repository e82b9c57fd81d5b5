// Quantities with units: Time (integer picoseconds), Bytes (integer bytes) and BytesPerSecond
// (double), with parsers and printers for the strings users write in YAML and on the command line.
//
// Conventions (docs/design.md, "Modeling decisions"):
//  - decimal prefixes are powers of 1000 (KB, MB, GB, Gbps), binary ones powers of 1024 (KiB, GiB);
//  - a lower-case `b` is a bit and an upper-case `B` a byte: `400Gbps` = 50e9 B/s, `50GB/s` = 50e9
//  B/s;
//  - negative values, overflow and a missing unit are errors (InputError), never silent defaults.
#pragma once

#include <compare>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace stepsim {

// A point in simulated time or a duration, in integer picoseconds. int64 picoseconds cover about
// 106 days, far more than any training step.
class Time {
 public:
  constexpr Time() = default;
  static constexpr Time ps(std::int64_t picoseconds) { return Time(picoseconds); }
  static constexpr Time ns(std::int64_t n) { return Time(n * 1'000); }
  static constexpr Time us(std::int64_t n) { return Time(n * 1'000'000); }
  static constexpr Time ms(std::int64_t n) { return Time(n * 1'000'000'000); }
  static constexpr Time zero() { return Time(0); }
  static constexpr Time max() { return Time(std::numeric_limits<std::int64_t>::max()); }
  // Rounds to the nearest picosecond. Throws InputError when the value is negative, not finite or
  // beyond max().
  static Time from_seconds(double seconds);

  constexpr std::int64_t picoseconds() const { return ps_; }
  constexpr double seconds() const { return static_cast<double>(ps_) * 1e-12; }
  constexpr double microseconds() const { return static_cast<double>(ps_) * 1e-6; }

  constexpr auto operator<=>(const Time&) const = default;
  constexpr Time operator+(Time o) const { return Time(ps_ + o.ps_); }
  constexpr Time operator-(Time o) const { return Time(ps_ - o.ps_); }
  constexpr Time& operator+=(Time o) {
    ps_ += o.ps_;
    return *this;
  }
  constexpr Time& operator-=(Time o) {
    ps_ -= o.ps_;
    return *this;
  }
  constexpr Time operator*(std::int64_t k) const { return Time(ps_ * k); }

 private:
  constexpr explicit Time(std::int64_t ps) : ps_(ps) {}
  std::int64_t ps_ = 0;
};

// A size in bytes; never negative.
class Bytes {
 public:
  constexpr Bytes() = default;
  constexpr explicit Bytes(std::int64_t count) : count_(count) {}
  constexpr std::int64_t count() const { return count_; }
  constexpr double as_double() const { return static_cast<double>(count_); }

  constexpr auto operator<=>(const Bytes&) const = default;
  constexpr Bytes operator+(Bytes o) const { return Bytes(count_ + o.count_); }
  constexpr Bytes operator-(Bytes o) const { return Bytes(count_ - o.count_); }
  constexpr Bytes& operator+=(Bytes o) {
    count_ += o.count_;
    return *this;
  }
  constexpr Bytes operator*(std::int64_t k) const { return Bytes(count_ * k); }

 private:
  std::int64_t count_ = 0;
};

// A rate in bytes per second.
class BytesPerSecond {
 public:
  constexpr BytesPerSecond() = default;
  constexpr explicit BytesPerSecond(double value) : value_(value) {}
  static constexpr BytesPerSecond gigabytes(double gb) { return BytesPerSecond(gb * 1e9); }
  static constexpr BytesPerSecond gigabits(double gbit) { return BytesPerSecond(gbit * 1e9 / 8); }
  constexpr double value() const { return value_; }
  constexpr double gigabytes_per_second() const { return value_ * 1e-9; }

  constexpr auto operator<=>(const BytesPerSecond&) const = default;
  constexpr BytesPerSecond operator*(double k) const { return BytesPerSecond(value_ * k); }
  constexpr BytesPerSecond operator+(BytesPerSecond o) const {
    return BytesPerSecond(value_ + o.value_);
  }

 private:
  double value_ = 0.0;
};

// Time to move `bytes` at `rate`, rounded to the nearest picosecond.
Time transfer_time(Bytes bytes, BytesPerSecond rate);

// Parsers. Each accepts a decimal number (optionally with a fraction and an exponent), optional
// spaces and a unit, and throws InputError with a message that names the bad text and what was
// expected. Sizes and times must come out as whole bytes / picoseconds.
//   sizes:      B, KB, MB, GB, TB, PB, KiB, MiB, GiB, TiB, PiB
//   bandwidths: bps, Kbps, Mbps, Gbps, Tbps (also b/s, Kb/s, ...) and B/s, KB/s, MB/s, GB/s, TB/s,
//               KiB/s, MiB/s, GiB/s, TiB/s
//   times:      ps, ns, us, µs, ms, s
Bytes parse_bytes(std::string_view text);
BytesPerSecond parse_bandwidth(std::string_view text);
Time parse_time(std::string_view text);

// Printers, for people. parse_*(format_*(x)) == x for sizes and times that are exact in the
// printed unit (for example 25 MiB, 1.5 us).
std::string format_bytes(Bytes bytes);
std::string format_bandwidth(BytesPerSecond rate);  // decimal: "450 GB/s"
std::string format_time(Time time);                 // "1.5 us", "12.345 ms"

}  // namespace stepsim
