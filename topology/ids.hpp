// Small value-type identifiers of a topology: NodeId (a vertex: accelerator, die, CPU, NIC or
// switch) and LinkIndex (a directed link). Both are dense: nodes are 0..num_nodes-1 and links are
// 0..num_links-1, so other libraries (the flow network) can index arrays by them.
#pragma once

#include <vector>

#include "sim/common/dense_id.hpp"

namespace stepsim::topology {

using NodeId = DenseId<struct NodeTag>;
using LinkIndex = DenseId<struct LinkTag>;

// A route: the links crossed from source to destination, in order. Empty when source ==
// destination.
using Path = std::vector<LinkIndex>;

}  // namespace stepsim::topology
