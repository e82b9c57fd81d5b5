// The collective operations, one vocabulary for what a training step calls (workloads) and how it
// runs (collectives). Send/Recv is one point-to-point transfer between two ranks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace stepsim {

enum class CollectiveKind : std::uint8_t {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kAllToAllv,
  kBroadcast,
  kReduce,
  kSendRecv,  // the last: switches list every kind, with no count among them
};
inline constexpr std::size_t kCollectiveKindCount =
    static_cast<std::size_t>(CollectiveKind::kSendRecv) + 1;

// "allreduce", "allgather", "reducescatter", "alltoall", "alltoallv", "broadcast", "reduce",
// "sendrecv".
std::string_view to_string(CollectiveKind kind);
// The names above (case-insensitive; "all_reduce", "all-reduce" also accepted). Throws InputError
// naming the bad text and the closest name.
CollectiveKind parse_collective_kind(std::string_view text);
std::vector<std::string> collective_kind_names();

}  // namespace stepsim
