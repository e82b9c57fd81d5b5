// The one design of stepsim's identifiers: a dense index (0..n-1, so arrays are indexed by it)
// that cannot be mixed up with another kind of index, since each kind has its own tag type.
// Topology nodes and links, flow-network links and flows, and communicator groups are all one.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <limits>

namespace stepsim {

template <typename Tag, typename Rep = std::uint32_t>
class DenseId {
 public:
  static constexpr Rep kInvalid = std::numeric_limits<Rep>::max();
  // Invalid until given a value.
  constexpr DenseId() = default;
  constexpr explicit DenseId(Rep value) : value_(value) {}
  constexpr Rep value() const { return value_; }
  constexpr bool valid() const { return value_ != kInvalid; }
  constexpr auto operator<=>(const DenseId&) const = default;

 private:
  Rep value_ = kInvalid;
};

}  // namespace stepsim

template <typename Tag, typename Rep>
struct std::hash<stepsim::DenseId<Tag, Rep>> {
  std::size_t operator()(stepsim::DenseId<Tag, Rep> id) const noexcept {
    return std::hash<Rep>()(id.value());
  }
};
