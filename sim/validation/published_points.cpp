#include "sim/validation/published_points.hpp"

#include "sim/collectives/runner/placement.hpp"

namespace stepsim::validation {

std::vector<PublishedPoint> published_busbw(const CaseFile& cases, const std::string& topology,
                                            const std::string& op, const std::string& algorithm,
                                            const std::vector<std::uint32_t>& ranks,
                                            std::uint32_t accelerators) {
  std::vector<PublishedPoint> points;
  for (const Table& table : cases.tables) {
    for (const Case& c : table.cases) {
      if (!c.collective || c.measure != Measure::kBusbw) continue;
      const CollectiveSetup& setup = *c.collective;
      if (setup.topology != topology || setup.op != op) continue;
      if (algorithm != "auto" && setup.algorithm != algorithm) continue;
      if (collectives::parse_ranks(setup.ranks, accelerators, "ranks") != ranks) continue;
      points.push_back(
          {setup.size, c.published.value, setup.algorithm, c.figure, c.published.reference});
    }
  }
  return points;
}

}  // namespace stepsim::validation
