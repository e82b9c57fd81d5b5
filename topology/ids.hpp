// Small value-type identifiers of a topology: NodeId (a vertex: accelerator, die, CPU, NIC or
// switch) and LinkIndex (a directed link). Both are dense: nodes are 0..num_nodes-1 and links are
// 0..num_links-1, so other libraries (the flow network) can index arrays by them.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

namespace stepsim::topology {

namespace detail {
// A dense index that cannot be mixed up with another kind of index.
template <typename Tag>
class DenseId {
 public:
  static constexpr std::uint32_t kInvalid = std::numeric_limits<std::uint32_t>::max();
  constexpr DenseId() = default;
  constexpr explicit DenseId(std::uint32_t value) : value_(value) {}
  constexpr std::uint32_t value() const { return value_; }
  constexpr bool valid() const { return value_ != kInvalid; }
  constexpr auto operator<=>(const DenseId&) const = default;

 private:
  std::uint32_t value_ = kInvalid;
};
}  // namespace detail

using NodeId = detail::DenseId<struct NodeTag>;
using LinkIndex = detail::DenseId<struct LinkTag>;

// A route: the links crossed from source to destination, in order. Empty when source ==
// destination.
using Path = std::vector<LinkIndex>;

}  // namespace stepsim::topology

template <typename Tag>
struct std::hash<stepsim::topology::detail::DenseId<Tag>> {
  std::size_t operator()(stepsim::topology::detail::DenseId<Tag> id) const noexcept {
    return std::hash<std::uint32_t>()(id.value());
  }
};
