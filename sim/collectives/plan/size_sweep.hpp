// The buffer sizes of a `stepsim collective` run, as nccl-tests sweeps them with `-b MIN -e MAX
// -f 2`: MIN, 2·MIN, 4·MIN, ... up to MAX. Written "8B:16GiB", or a single size "1GiB".
#pragma once

#include <string_view>
#include <vector>

#include "sim/common/units.hpp"

namespace stepsim::collectives {

// Throws InputError for a size without unit, MIN > MAX, zero or negative sizes.
std::vector<Bytes> parse_size_sweep(std::string_view text);

}  // namespace stepsim::collectives
