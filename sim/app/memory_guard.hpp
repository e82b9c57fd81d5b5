// The memory a simulation may use, and the checks that refuse one that would need more, before it
// starts: a training step by its resource estimate (sim/run/resource_estimate.hpp), an all-to-all
// by its n(n-1) transfers or flows.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>

#include "sim/common/units.hpp"
#include "sim/run/resource_estimate.hpp"

namespace stepsim::workloads {
struct WorkloadSpec;
}

namespace stepsim::app {

// The memory a simulation may use and where that figure comes from.
//   max_memory: a size ("8GiB"), or empty for the machine's physical memory.
//   THROWS: InputError naming --max-memory for a size that is not above zero.
std::pair<Bytes, std::string> memory_limit(const std::string& max_memory);

// Refuses an all-to-all over `n` ranks, n(n-1) `items` (transfers, flows) of about `bytes_each`
// bytes of memory each, when they need more than memory_limit(max_memory).
//   THROWS: InputError that starts with `subject` ("--op alltoall") and says how many ranks fit.
void guard_all_to_all(std::string_view subject, std::string_view items, std::uint64_t n,
                      double bytes_each, const std::string& max_memory);

// Estimates what simulating the step of `spec` needs and returns the estimate.
//   THROWS: InputError with the estimate and advice when it needs more than
//           memory_limit(max_memory).
ResourceEstimate guard_step_memory(const workloads::WorkloadSpec& spec,
                                   const std::string& max_memory);

// Tells the user of an estimate that was extrapolated (a large step): through `note` when the
// step will take long enough (over 10 s at the reference machine's rate), else through `detail`
// (either may be empty: not told).
void tell_estimate(const ResourceEstimate& estimate,
                   const std::function<void(const std::string&)>& note,
                   const std::function<void(const std::string&)>& detail);

}  // namespace stepsim::app
