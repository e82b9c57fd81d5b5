// Small value-type identifiers of the engine, so that a link index cannot be passed where a flow
// is expected.
#pragma once

#include <compare>
#include <cstdint>

namespace stepsim::engine {

// A directed link of a FlowNetwork. Ids are dense: the n-th add_link() returns LinkId{n - 1}.
struct LinkId {
  std::uint32_t value = 0;
  constexpr auto operator<=>(const LinkId&) const = default;
};

// A flow of a FlowNetwork. Opaque; unique among the flows that one network ever started.
struct FlowId {
  std::uint64_t value = 0;
  constexpr auto operator<=>(const FlowId&) const = default;
};

}  // namespace stepsim::engine
