// docs/validation.md: every validation row (published, simulated, error), the mean and worst
// absolute error per table, the assumptions of each case and the calibrated parameters with their
// sources, as Markdown. No wall-clock figures: the same results give the same bytes.
#pragma once

#include <iosfwd>
#include <vector>

#include "sim/validation/validation_run.hpp"

namespace stepsim::validation {

void write_report(std::ostream& out, const CaseFile& cases, const std::vector<TableResult>& results,
                  bool quick_only);

// One line per table for the terminal: "nccl-busbw  12 rows  mean 1.2%  worst 4.0%  (target 5%)".
void write_summary(std::ostream& out, const std::vector<TableResult>& results);

}  // namespace stepsim::validation
