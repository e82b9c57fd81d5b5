// A StepReport as bytes, so that a process of a distributed search (distribution.hpp) can send
// the report of a layout it simulated to the process that writes the output. The encoding is
// exact (integers and doubles bit for bit, the resolved scenario as CBOR), so the decoded report
// prints, and serializes to JSON and CSV, byte for byte as the original does. It is the host's
// byte order: every process of a run must be the same architecture (they run the same binary).
#pragma once

#include <string>
#include <string_view>

#include "sim/run/step_report.hpp"

namespace stepsim::search {

std::string encode_report(const StepReport& report);
// The report encode_report() made `bytes` from. Throws std::runtime_error when `bytes` is not
// such an encoding (truncated or with bytes left over): a bug, not bad input.
StepReport decode_report(std::string_view bytes);

}  // namespace stepsim::search
