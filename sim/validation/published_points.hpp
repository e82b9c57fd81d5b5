// The published nccl-tests figures of the validation cases (validation/cases.yaml) that a
// `stepsim collective` run reproduces: the same topology spec, operation and ranks, measured as
// bus bandwidth. `stepsim collective --html` overlays them on the simulated curve.
#pragma once

#include <string>
#include <vector>

#include "sim/common/units.hpp"
#include "sim/validation/validation_case.hpp"

namespace stepsim::validation {

struct PublishedPoint {
  Bytes size;
  double busbw_GBps = 0;
  std::string algorithm;  // the case's algorithm (as the collectives registry names it)
  std::string figure;     // "8x H100 AllReduce ring, large"
  std::string reference;  // "nccl_busbw.yaml single_node.0.busbw"
};

// The busbw cases of `cases` whose topology spec is `topology` (as written), whose operation is
// `op` and whose ranks are `ranks` (as parse_ranks gives them on `accelerators` accelerators); with
// an `algorithm` other than "auto", only the cases of that algorithm.
std::vector<PublishedPoint> published_busbw(const CaseFile& cases, const std::string& topology,
                                            const std::string& op, const std::string& algorithm,
                                            const std::vector<std::uint32_t>& ranks,
                                            std::uint32_t accelerators);

}  // namespace stepsim::validation
