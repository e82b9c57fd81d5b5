#include "sim/collectives/operation.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <array>
#include <cctype>
#include <stdexcept>

#include "sim/common/config.hpp"
#include "sim/common/input_error.hpp"

namespace stepsim::collectives {
namespace {

struct KindName {
  OpKind kind;
  std::string_view name;
};

constexpr std::array<KindName, 8> kNames = {{
    {OpKind::kAllReduce, "allreduce"},
    {OpKind::kAllGather, "allgather"},
    {OpKind::kReduceScatter, "reducescatter"},
    {OpKind::kAllToAll, "alltoall"},
    {OpKind::kAllToAllv, "alltoallv"},
    {OpKind::kBroadcast, "broadcast"},
    {OpKind::kReduce, "reduce"},
    {OpKind::kSendRecv, "sendrecv"},
}};

}  // namespace

std::string_view to_string(OpKind kind) {
  for (const auto& entry : kNames)
    if (entry.kind == kind) return entry.name;
  throw std::logic_error("to_string(OpKind): unknown kind (this is a bug)");
}

std::vector<std::string> op_kind_names() {
  std::vector<std::string> names;
  for (const auto& entry : kNames)
    names.emplace_back(entry.name);
  return names;
}

OpKind parse_op_kind(std::string_view text) {
  // People write all_reduce, all-reduce, AllReduce: compare without case and separators.
  std::string key;
  for (char c : text)
    if (c != '_' && c != '-')
      key.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  for (const auto& entry : kNames)
    if (entry.name == key) return entry.kind;
  const std::string suggestion = config::closest_match(key, op_kind_names());
  throw InputError(
      fmt::format("unknown collective operation '{}'{}; expected one of: {}", text,
                  suggestion.empty() ? "" : fmt::format(" (did you mean '{}'?)", suggestion),
                  fmt::join(op_kind_names(), ", ")));
}

double bus_bandwidth_factor(OpKind kind, std::size_t ranks) {
  const double n = static_cast<double>(ranks);
  switch (kind) {
    case OpKind::kAllReduce:
      return 2.0 * (n - 1.0) / n;
    case OpKind::kAllGather:
    case OpKind::kReduceScatter:
    case OpKind::kAllToAll:
    case OpKind::kAllToAllv:
      return (n - 1.0) / n;
    case OpKind::kBroadcast:
    case OpKind::kReduce:
    case OpKind::kSendRecv:
      return 1.0;
  }
  throw std::logic_error("bus_bandwidth_factor: unknown kind (this is a bug)");
}

std::int64_t nccl_tests_count(OpKind kind, Bytes size, std::size_t ranks, int type_bytes) {
  const std::int64_t elements = size.count() / type_bytes;
  if (kind == OpKind::kAllGather || kind == OpKind::kReduceScatter || kind == OpKind::kAllToAll ||
      kind == OpKind::kAllToAllv)
    return elements / static_cast<std::int64_t>(ranks);
  return elements;
}

}  // namespace stepsim::collectives
