#include "sim/common/units.hpp"

#include <fmt/format.h>
#include <array>
#include <cmath>

#include "sim/common/input_error.hpp"

namespace stepsim {
namespace {

__extension__ typedef unsigned __int128 u128;  // exact arithmetic while parsing
constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();

// A non-negative decimal number held exactly: digits × 10^exponent.
struct Decimal {
  u128 digits = 0;
  int exponent = 0;
  double as_double() const { return static_cast<double>(digits) * std::pow(10.0, exponent); }
};

struct NumberAndUnit {
  Decimal number;
  std::string_view unit;
};

bool is_space(char c) {
  return c == ' ' || c == '\t';
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front()))
    s.remove_prefix(1);
  while (!s.empty() && is_space(s.back()))
    s.remove_suffix(1);
  return s;
}

// Splits "1.5 GiB" into an exact decimal and the unit text. `kind` ("size", "bandwidth", "time")
// and `example` only shape the error messages.
NumberAndUnit split(std::string_view text, std::string_view kind, std::string_view example) {
  const std::string_view s = trim(text);
  auto bad = [&](std::string_view why) -> InputError {
    return InputError(
        fmt::format("'{}' is not a valid {}: {} (expected a number and a unit, like {})", text,
                    kind, why, example));
  };
  if (s.empty()) throw bad("it is empty");
  std::size_t i = 0;
  if (s[i] == '+') ++i;
  if (i < s.size() && s[i] == '-') {
    throw InputError(fmt::format("'{}' is negative; a {} must be zero or positive (like {})", text,
                                 kind, example));
  }
  Decimal d;
  int significant = 0;
  bool any_digit = false;
  auto push_digit = [&](char c) {
    if ((d.digits != 0 || c != '0') && ++significant > 30) throw bad("too many digits");
    d.digits = d.digits * 10 + static_cast<unsigned>(c - '0');
  };
  for (; i < s.size() && is_digit(s[i]); ++i) {
    any_digit = true;
    push_digit(s[i]);
  }
  if (i < s.size() && s[i] == '.') {
    ++i;
    for (; i < s.size() && is_digit(s[i]); ++i) {
      any_digit = true;
      push_digit(s[i]);
      --d.exponent;
    }
  }
  if (!any_digit) throw bad("it does not start with a number");
  if (i + 1 < s.size() && (s[i] == 'e' || s[i] == 'E') &&
      (is_digit(s[i + 1]) || s[i + 1] == '-' || s[i + 1] == '+')) {
    ++i;
    int sign = 1;
    if (s[i] == '-' || s[i] == '+') sign = s[i++] == '-' ? -1 : 1;
    if (i >= s.size() || !is_digit(s[i])) throw bad("the exponent has no digits");
    int e = 0;
    for (; i < s.size() && is_digit(s[i]); ++i) {
      e = e * 10 + (s[i] - '0');
      if (e > 400) throw bad("the exponent is out of range");
    }
    d.exponent += sign * e;
  }
  if (d.digits == 0) d.exponent = 0;
  return {d, trim(s.substr(i))};
}

struct Unit {
  std::string_view name;
  std::int64_t multiplier;  // in the base unit (bytes or picoseconds)
};

constexpr std::int64_t kKi = 1024;
constexpr std::array<Unit, 12> kSizeUnits{{
    {"B", 1},
    {"KB", 1'000},
    {"kB", 1'000},
    {"MB", 1'000'000},
    {"GB", 1'000'000'000},
    {"TB", 1'000'000'000'000},
    {"PB", 1'000'000'000'000'000},
    {"KiB", kKi},
    {"MiB", kKi* kKi},
    {"GiB", kKi* kKi* kKi},
    {"TiB", kKi* kKi* kKi* kKi},
    {"PiB", kKi* kKi* kKi* kKi* kKi},
}};

constexpr std::array<Unit, 6> kTimeUnits{{
    {"ps", 1},
    {"ns", 1'000},
    {"us", 1'000'000},
    {"µs", 1'000'000},
    {"ms", 1'000'000'000},
    {"s", 1'000'000'000'000},
}};

std::string unit_list(auto const& units) {
  std::string out;
  for (const auto& u : units) {
    if (!out.empty()) out += ", ";
    out += u.name;
  }
  return out;
}

// Exact value × multiplier as an integer; throws when it overflows int64 or is not whole.
std::int64_t exact_integer(std::string_view text, Decimal d, std::int64_t multiplier,
                           std::string_view whole_what) {
  auto too_large = [&] {
    return InputError(
        fmt::format("'{}' is too large (the limit is {} {})", text, kInt64Max, whole_what));
  };
  u128 value = d.digits * static_cast<u128>(multiplier);
  if (d.digits != 0 && value / d.digits != static_cast<u128>(multiplier)) throw too_large();
  for (int e = 0; e < d.exponent; ++e) {
    if (value > static_cast<u128>(kInt64Max)) throw too_large();
    value *= 10;
  }
  for (int e = 0; e < -d.exponent; ++e) {
    if (value % 10 != 0) {
      throw InputError(fmt::format("'{}' is not a whole number of {}", text, whole_what));
    }
    value /= 10;
  }
  if (value > static_cast<u128>(kInt64Max)) throw too_large();
  return static_cast<std::int64_t>(value);
}

template <std::size_t N>
const Unit* find_unit(const std::array<Unit, N>& units, std::string_view name) {
  for (const auto& u : units) {
    if (u.name == name) return &u;
  }
  return nullptr;
}

// Prints value/divisor with at most `decimals` decimals, trailing zeros removed.
std::string trimmed_decimal(double value, int decimals) {
  std::string s = fmt::format("{:.{}f}", value, decimals);
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0')
      s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s;
}

}  // namespace

Time Time::from_seconds(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) {
    throw InputError(fmt::format("time {} s is not a finite non-negative number", seconds));
  }
  const double ps = std::round(seconds * 1e12);
  if (ps >= 9.2e18) {
    throw InputError(
        fmt::format("time {} s is beyond the simulator's range (about 106 days)", seconds));
  }
  return Time(static_cast<std::int64_t>(ps));
}

Time transfer_time(Bytes bytes, BytesPerSecond rate) {
  if (!(rate.value() > 0)) {
    throw InputError(
        fmt::format("cannot transfer {} at a rate of {} B/s", bytes.count(), rate.value()));
  }
  return Time::from_seconds(bytes.as_double() / rate.value());
}

Bytes parse_bytes(std::string_view text) {
  const auto [number, unit] = split(text, "size", "25MiB or 1.5GB");
  if (unit.empty()) {
    throw InputError(
        fmt::format("'{}' has no unit; a size needs one of {}", text, unit_list(kSizeUnits)));
  }
  const Unit* u = find_unit(kSizeUnits, unit);
  if (u == nullptr) {
    std::string hint;
    if (unit.ends_with("bps") || unit.ends_with("/s")) hint = " (that is a bandwidth, not a size)";
    if (unit == "b" || unit == "Kb" || unit == "Mb" || unit == "Gb") {
      hint = " (a lower-case 'b' is a bit; sizes are in bytes, 'B')";
    }
    throw InputError(fmt::format("'{}': unknown size unit '{}'{}; expected one of {}", text, unit,
                                 hint, unit_list(kSizeUnits)));
  }
  return Bytes(exact_integer(text, number, u->multiplier, "bytes"));
}

BytesPerSecond parse_bandwidth(std::string_view text) {
  const auto [number, unit] = split(text, "bandwidth", "400Gbps or 50GB/s");
  static constexpr std::string_view kExpected =
      "bps, Kbps, Mbps, Gbps, Tbps (bits per second) or B/s, KB/s, MB/s, GB/s, TB/s, KiB/s, MiB/s, "
      "GiB/s, TiB/s (bytes per second)";
  if (unit.empty()) {
    throw InputError(fmt::format("'{}' has no unit; a bandwidth needs one of {}", text, kExpected));
  }
  struct Prefix {
    std::string_view name;
    double factor;
  };
  static constexpr std::array<Prefix, 10> kPrefixes{{{"", 1.0},
                                                     {"K", 1e3},
                                                     {"k", 1e3},
                                                     {"M", 1e6},
                                                     {"G", 1e9},
                                                     {"T", 1e12},
                                                     {"Ki", 1024.0},
                                                     {"Mi", 1048576.0},
                                                     {"Gi", 1073741824.0},
                                                     {"Ti", 1099511627776.0}}};
  double per_second = 0;  // bytes per second per unit
  for (const auto& p : kPrefixes) {
    if (!unit.starts_with(p.name)) continue;
    const std::string_view rest = unit.substr(p.name.size());
    const bool binary = p.name.size() == 2;
    if (rest == "B/s") per_second = p.factor;
    if (!binary && (rest == "bps" || rest == "b/s")) per_second = p.factor / 8.0;
    if (per_second > 0) break;
  }
  if (per_second == 0) {
    std::string hint;
    if (unit.ends_with("Bps")) {
      hint = fmt::format(" ('{}' is ambiguous: write '{}/s' for bytes or '{}bps' for bits)", unit,
                         unit.substr(0, unit.size() - 2), unit.substr(0, unit.size() - 3));
    }
    throw InputError(fmt::format("'{}': unknown bandwidth unit '{}'{}; expected one of {}", text,
                                 unit, hint, kExpected));
  }
  const double value = number.as_double() * per_second;
  if (!std::isfinite(value) || value > 1e18) {
    throw InputError(fmt::format("'{}' is too large (the limit is 1 EB/s)", text));
  }
  // Below a byte a second a link never drains a step's data (and prints as 0 B/s).
  if (value > 0 && value < 1) {
    throw InputError(fmt::format("'{}' is too small (the least is 1 B/s, or 8 bps)", text));
  }
  return BytesPerSecond(value);
}

Time parse_time(std::string_view text) {
  const auto [number, unit] = split(text, "time", "1.5us or 10ms");
  if (unit.empty()) {
    throw InputError(
        fmt::format("'{}' has no unit; a time needs one of {}", text, unit_list(kTimeUnits)));
  }
  const Unit* u = find_unit(kTimeUnits, unit);
  if (u == nullptr) {
    throw InputError(fmt::format("'{}': unknown time unit '{}'; expected one of {}", text, unit,
                                 unit_list(kTimeUnits)));
  }
  return Time::ps(exact_integer(text, number, u->multiplier, "picoseconds"));
}

std::string format_bytes(Bytes bytes) {
  const std::int64_t n = bytes.count();
  static constexpr std::array<Unit, 5> kBinary{{{"PiB", kKi * kKi * kKi * kKi * kKi},
                                                {"TiB", kKi * kKi * kKi * kKi},
                                                {"GiB", kKi * kKi * kKi},
                                                {"MiB", kKi * kKi},
                                                {"KiB", kKi}}};
  static constexpr std::array<Unit, 5> kDecimal{{{"PB", 1'000'000'000'000'000},
                                                 {"TB", 1'000'000'000'000},
                                                 {"GB", 1'000'000'000},
                                                 {"MB", 1'000'000},
                                                 {"KB", 1'000}}};
  // In each family the largest unit not above n; of the two, the one that shows n exactly with the
  // fewest decimals (binary on a tie), so that exact sizes print exactly: 16 GiB, 25 MB, 1.5 GiB.
  struct Choice {
    const Unit* unit = nullptr;
    int decimals = 99;
  };
  auto choose = [n](const auto& family) {
    for (const auto& u : family) {
      if (n < u.multiplier) continue;
      Choice c{&u, 99};
      u128 scaled = static_cast<u128>(n);
      for (int d = 0; d <= 3; ++d, scaled *= 10) {
        if (scaled % static_cast<u128>(u.multiplier) == 0) {
          c.decimals = d;
          break;
        }
      }
      return c;
    }
    return Choice{};
  };
  const Choice binary = choose(kBinary);
  const Choice decimal = choose(kDecimal);
  const Choice& best = decimal.decimals < binary.decimals ? decimal : binary;
  if (best.unit == nullptr) return fmt::format("{} B", n);
  const int decimals = best.decimals <= 3 ? best.decimals : 2;
  return fmt::format(
      "{} {}",
      trimmed_decimal(static_cast<double>(n) / static_cast<double>(best.unit->multiplier),
                      decimals),
      best.unit->name);
}

std::string format_bandwidth(BytesPerSecond rate) {
  static constexpr std::array<std::pair<double, std::string_view>, 4> kUnits{
      {{1e12, "TB/s"}, {1e9, "GB/s"}, {1e6, "MB/s"}, {1e3, "KB/s"}}};
  for (const auto& [scale, name] : kUnits) {
    if (rate.value() >= scale)
      return fmt::format("{} {}", trimmed_decimal(rate.value() / scale, 3), name);
  }
  return fmt::format("{} B/s", trimmed_decimal(rate.value(), 3));
}

std::string format_time(Time time) {
  const std::int64_t ps = time.picoseconds();
  static constexpr std::array<Unit, 4> kUnits{
      {{"s", 1'000'000'000'000}, {"ms", 1'000'000'000}, {"us", 1'000'000}, {"ns", 1'000}}};
  const std::int64_t magnitude = ps < 0 ? -ps : ps;
  for (const auto& u : kUnits) {
    if (magnitude >= u.multiplier) {
      return fmt::format("{} {}", trimmed_decimal(static_cast<double>(ps) / u.multiplier, 3),
                         u.name);
    }
  }
  return fmt::format("{} ps", ps);
}

}  // namespace stepsim
