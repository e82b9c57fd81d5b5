// A collective operation as a communicator group asks for it: the kind, the buffer size as
// nccl-tests counts it, and the extra arguments some kinds need (a root, a peer, a size matrix).
//
// Buffer size conventions (nccl-tests, doc/PERFORMANCE.md):
//   AllReduce, Broadcast, Reduce, Send/Recv: the buffer, S bytes on every rank.
//   AllGather: the OUTPUT size S; each of the n ranks contributes S/n.
//   ReduceScatter: the INPUT size S; each rank ends with S/n.
//   AllToAll: each rank's send buffer S, S/n to every rank (itself included).
//   AllToAllv: a matrix of per-pair sizes (row = sender); `size` is the largest row sum.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/common/collective_kind.hpp"
#include "sim/common/units.hpp"

namespace stepsim::collectives {

// The operation's kind is the shared CollectiveKind (sim/common/collective_kind.hpp).

// nccl-tests' bus bandwidth factor: busbw = algbw x factor. 2(n-1)/n for AllReduce, (n-1)/n for
// AllGather, ReduceScatter, AllToAll(v); 1 for Broadcast, Reduce and Send/Recv.
double bus_bandwidth_factor(CollectiveKind kind, std::size_t ranks);

// Per-rank element count nccl-tests prints in its "count" column for `size` bytes of `type_bytes`
// elements (AllGather and ReduceScatter print the per-rank count, S/n).
std::int64_t nccl_tests_count(CollectiveKind kind, Bytes size, std::size_t ranks, int type_bytes);

// The largest buffer a collective may have: plans multiply it by small factors (an AllReduce
// ring moves 2(n-1)/n of it over each edge), which must stay far from the 2^63 bytes a Bytes
// holds. 1 PiB at 50 GB/s is 6 hours; no training or benchmark run comes near it.
inline constexpr std::int64_t kMaxOperationBytes = std::int64_t{1} << 50;

struct Operation {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  Bytes size;
  std::uint32_t root = 0;  // Broadcast / Reduce root; Send/Recv sender (group member index)
  std::uint32_t peer = 1;  // Send/Recv receiver (group member index)
  // AllToAllv only: n*n sizes, matrix[src * n + dst].
  std::vector<Bytes> matrix;
};

}  // namespace stepsim::collectives
