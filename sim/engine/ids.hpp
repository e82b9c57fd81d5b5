// Small value-type identifiers of the engine (sim/common/dense_id.hpp), so that a link index
// cannot be passed where a flow is expected.
#pragma once

#include <cstdint>

#include "sim/common/dense_id.hpp"

namespace stepsim::engine {

// A directed link of a FlowNetwork. Ids are dense: the n-th add_link() returns LinkId(n - 1).
using LinkId = DenseId<struct FlowNetworkLinkTag>;

// A flow of a FlowNetwork. Opaque; unique among the flows that one network ever started.
using FlowId = DenseId<struct FlowTag, std::uint64_t>;

}  // namespace stepsim::engine
