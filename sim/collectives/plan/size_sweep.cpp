#include "sim/collectives/plan/size_sweep.hpp"

#include <fmt/format.h>

#include "sim/collectives/plan/operation.hpp"
#include "sim/common/input_error.hpp"

namespace stepsim::collectives {

std::vector<Bytes> parse_size_sweep(std::string_view text) {
  const auto colon = text.find(':');
  auto parse = [&](std::string_view part) {
    try {
      return parse_bytes(part);
    } catch (const InputError& e) {
      throw InputError(fmt::format("--sizes '{}': {}", text, e.what()));
    }
  };
  const Bytes first = parse(text.substr(0, colon));
  const Bytes last = colon == std::string_view::npos ? first : parse(text.substr(colon + 1));
  if (first.count() <= 0)
    throw InputError(fmt::format("--sizes '{}': the first size must be at least 1 byte", text));
  if (last.count() > kMaxOperationBytes) {
    throw InputError(fmt::format("--sizes '{}': at most 1 PiB ({} bytes) per collective", text,
                                 kMaxOperationBytes));
  }
  if (last < first)
    throw InputError(fmt::format("--sizes '{}': the first size is larger than the last", text));
  std::vector<Bytes> sizes;
  for (Bytes s = first; s <= last; s = s * 2) {
    sizes.push_back(s);
    if (s.count() > last.count() / 2) break;
  }
  return sizes;
}

}  // namespace stepsim::collectives
