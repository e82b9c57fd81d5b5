#include "sim/collectives/plan/operation.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <array>
#include <cctype>
#include <stdexcept>

#include "sim/common/config.hpp"
#include "sim/common/input_error.hpp"

namespace stepsim::collectives {

double bus_bandwidth_factor(CollectiveKind kind, std::size_t ranks) {
  const double n = static_cast<double>(ranks);
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return 2.0 * (n - 1.0) / n;
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllToAll:
    case CollectiveKind::kAllToAllv:
      return (n - 1.0) / n;
    case CollectiveKind::kBroadcast:
    case CollectiveKind::kReduce:
    case CollectiveKind::kSendRecv:
      return 1.0;
  }
  throw std::logic_error("bus_bandwidth_factor: unknown kind (this is a bug)");
}

std::int64_t nccl_tests_count(CollectiveKind kind, Bytes size, std::size_t ranks, int type_bytes) {
  const std::int64_t elements = size.count() / type_bytes;
  if (kind == CollectiveKind::kAllGather || kind == CollectiveKind::kReduceScatter ||
      kind == CollectiveKind::kAllToAll || kind == CollectiveKind::kAllToAllv)
    return elements / static_cast<std::int64_t>(ranks);
  return elements;
}

}  // namespace stepsim::collectives
