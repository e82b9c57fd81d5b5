#include "sim/app/collective_writer.hpp"

#include <fmt/format.h>
#include <ostream>

namespace stepsim::app {
namespace {

std::string links_of(const CollectiveSweep& sweep) {
  return sweep.network.calibrated ? "calibrated" : "line-rate";
}

// The NCCL version as given, or empty.
std::string nccl_of(const CollectiveSweep& sweep) {
  return sweep.request.network.find("nccl").value_or("");
}

}  // namespace

void write_collective_table(std::ostream& out, const CollectiveSweep& sweep) {
  out << fmt::format(
      "# stepsim collective: {} on {} ranks of {}, algorithm {}, "
      "links {}, protocol {}{}\n#\n",
      to_string(sweep.kind), sweep.ranks.size(), sweep.topology_name, sweep.network.algorithm,
      links_of(sweep), sweep.protocol, nccl_of(sweep).empty() ? "" : ", NCCL " + nccl_of(sweep));
  out << fmt::format("# {:>12}  {:>12}  {:>6}  {:>10}  {:>7}  {:>7}  {}\n", "size", "count", "type",
                     "time", "algbw", "busbw", "algorithm");
  out << fmt::format("# {:>12}  {:>12}  {:>6}  {:>10}  {:>7}  {:>7}\n", "(B)", "(elements)", "",
                     "(us)", "(GB/s)", "(GB/s)");
  double sum = 0;
  for (const CollectiveRow& row : sweep.rows) {
    out << fmt::format("  {:>12}  {:>12}  {:>6}  {:>10.2f}  {:>7.2f}  {:>7.2f}  {}\n",
                       row.size.count(), row.count, "float", row.time.microseconds(),
                       row.algbw_GBps, row.busbw_GBps, row.algorithm);
    sum += row.busbw_GBps;
  }
  out << fmt::format("# Avg bus bandwidth    : {:.3f}\n",
                     sweep.rows.empty() ? 0.0 : sum / static_cast<double>(sweep.rows.size()));
}

nlohmann::json collective_json(const CollectiveSweep& sweep) {
  const CollectiveRequest& r = sweep.request;
  nlohmann::json j;
  j["topology"] = sweep.topology_name;
  j["op"] = std::string(to_string(sweep.kind));
  j["ranks"] = sweep.ranks.size();
  j["algorithm"] = sweep.network.algorithm;
  j["links"] = links_of(sweep);
  j["protocol"] = sweep.protocol;
  if (!nccl_of(sweep).empty()) j["nccl"] = nccl_of(sweep);
  if (!r.matrix.empty()) j["matrix"] = r.matrix;
  if (r.skew) j["skew"] = *r.skew;
  nlohmann::json rows = nlohmann::json::array();
  for (const CollectiveRow& row : sweep.rows)
    rows.push_back({{"size_bytes", row.size.count()},
                    {"count", row.count},
                    {"type", "float"},
                    {"time_us", row.time.microseconds()},
                    {"algbw_GBps", row.algbw_GBps},
                    {"busbw_GBps", row.busbw_GBps},
                    {"algorithm", row.algorithm}});
  j["rows"] = rows;
  return j;
}

void write_collective_page(std::ostream& out, const CollectiveSweep& sweep,
                           const std::vector<PublishedBusbw>& published) {
  const CollectiveRequest& r = sweep.request;
  const std::string kind(to_string(sweep.kind));
  std::vector<CollectivePoint> points;
  for (const CollectiveRow& row : sweep.rows)
    points.push_back(
        {row.size, row.time.microseconds(), row.algbw_GBps, row.busbw_GBps, row.algorithm});
  const std::vector<std::vector<std::string>> setup = {
      {"topology", fmt::format("{} ({})", r.topology, sweep.topology_name)},
      {"operation", kind},
      {"ranks", fmt::format("{} ({})", sweep.ranks.size(), r.ranks)},
      {"algorithm", sweep.network.algorithm},
      {"links", links_of(sweep)},
      {"sizes", r.sizes}};
  write_collective_html(
      out, fmt::format("{} on {} ranks of {}", kind, sweep.ranks.size(), sweep.topology_name),
      setup, points, published);
}

}  // namespace stepsim::app
