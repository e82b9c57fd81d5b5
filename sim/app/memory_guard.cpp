#include "sim/app/memory_guard.hpp"

#include <fmt/format.h>
#include <cmath>

#include "sim/common/input_error.hpp"

namespace stepsim::app {

std::pair<Bytes, std::string> memory_limit(const std::string& max_memory) {
  if (max_memory.empty()) return {machine_memory(), "the machine's memory"};
  Bytes limit;
  try {
    limit = parse_bytes(max_memory);
    if (limit.count() <= 0) throw InputError("a size above zero, such as 8GiB");
  } catch (const InputError& e) {
    throw InputError(fmt::format("--max-memory '{}': {}", max_memory, e.what()));
  }
  return {limit, "--max-memory"};
}

void guard_all_to_all(std::string_view subject, std::string_view items, std::uint64_t n,
                      double bytes_each, const std::string& max_memory) {
  if (n < 2) return;
  const double count = static_cast<double>(n) * static_cast<double>(n - 1);
  const double bytes = count * bytes_each;
  const auto [limit, source] = memory_limit(max_memory);
  if (limit.count() <= 0 || bytes <= static_cast<double>(limit.count())) return;
  const auto fitting =
      static_cast<std::uint64_t>(std::sqrt(static_cast<double>(limit.count()) / bytes_each));
  throw InputError(fmt::format(
      "{} on {} ranks: every rank sends to every other, {:.3g} {} needing about {} of memory, "
      "more than {} ({}); about {} ranks fit (--ranks), or raise the limit with --max-memory",
      subject, n, count, items, format_bytes(Bytes(static_cast<std::int64_t>(bytes))),
      format_bytes(limit), source, fitting));
}

ResourceEstimate guard_step_memory(const workloads::WorkloadSpec& spec,
                                   const std::string& max_memory) {
  const auto [limit, source] = memory_limit(max_memory);
  const ResourceEstimate estimate = estimate_resources(spec);
  check_resources(estimate, spec, limit, source);
  return estimate;
}

void tell_estimate(const ResourceEstimate& estimate,
                   const std::function<void(const std::string&)>& note,
                   const std::function<void(const std::string&)>& detail) {
  if (!estimate.extrapolated) return;
  const std::string what =
      fmt::format("{} micro-batches per replica, about {:.3g} operations and {} of memory",
                  estimate.micro_batches, static_cast<double>(estimate.operations),
                  format_bytes(estimate.memory));
  // A word of what is coming when the run will take a while (at the reference machine's rate).
  if (estimate.seconds > 10) {
    if (note) note(fmt::format("a large step: {}; expect about {:.0f} s", what, estimate.seconds));
  } else if (detail) {
    detail(fmt::format("estimate: {}; about {:.1f} s", what, estimate.seconds));
  }
}

}  // namespace stepsim::app
