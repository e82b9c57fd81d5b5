#include "sim/common/collective_kind.hpp"

#include <fmt/format.h>
#include <array>
#include <cctype>
#include <stdexcept>

#include "sim/common/closest_match.hpp"
#include "sim/common/input_error.hpp"

namespace stepsim {
namespace {

constexpr std::array<std::string_view, kCollectiveKindCount> kNames = {
    "allreduce", "allgather", "reducescatter", "alltoall",
    "alltoallv", "broadcast", "reduce",        "sendrecv"};

}  // namespace

std::string_view to_string(CollectiveKind kind) {
  const auto i = static_cast<std::size_t>(kind);
  if (i >= kNames.size()) throw std::logic_error("to_string(CollectiveKind): unknown kind (bug)");
  return kNames[i];
}

std::vector<std::string> collective_kind_names() {
  return {kNames.begin(), kNames.end()};
}

CollectiveKind parse_collective_kind(std::string_view text) {
  // People write all_reduce, all-reduce, AllReduce: compare without case and separators.
  std::string key;
  for (char c : text)
    if (c != '_' && c != '-')
      key.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  for (std::size_t i = 0; i < kNames.size(); ++i)
    if (kNames[i] == key) return static_cast<CollectiveKind>(i);
  const std::string suggestion = config::closest_match(key, collective_kind_names());
  throw InputError(
      fmt::format("unknown collective operation '{}'{}; expected one of: {}", text,
                  suggestion.empty() ? "" : fmt::format(" (did you mean '{}'?)", suggestion),
                  fmt::join(collective_kind_names(), ", ")));
}

}  // namespace stepsim
