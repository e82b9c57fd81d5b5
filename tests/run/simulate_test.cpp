// Same scenario, same results, byte for byte (docs/design.md: no unordered iteration, no pointer
// order, no clock leaks into the output): the summary, the --report JSON and the trace, plain and
// gzip, of two runs of one scenario are identical.
#include <gtest/gtest.h>

#include "tests/run/run_test_support.hpp"

namespace stepsim {
namespace {

using testing::output_path;
using testing::read_file;
using testing::run_stepsim;
using testing::source_file;

struct Outputs {
  std::string summary;
  std::string report;
  std::string trace;
  std::string trace_gz;  // the compressed bytes, not decompressed
};

Outputs run_once(const std::string& scenario, const std::string& tag) {
  const auto report = output_path(tag + ".report.json");
  const auto trace = output_path(tag + ".trace.json");
  const auto trace_gz = output_path(tag + ".trace.json.gz");
  const auto r = run_stepsim(
      {"run", source_file(scenario), "--report", report.string(), "--trace", trace.string()});
  EXPECT_EQ(r.code, 0) << r.err;
  const auto gz = run_stepsim({"run", source_file(scenario), "--trace", trace_gz.string()});
  EXPECT_EQ(gz.code, 0) << gz.err;
  EXPECT_EQ(gz.out, r.out) << "the trace must not change the summary";
  // Read the .gz file as bytes: rename it so that read_file does not decompress it.
  const auto raw = output_path(tag + ".trace.gz-bytes");
  std::filesystem::rename(trace_gz, raw);
  return {r.out, read_file(report), read_file(trace), read_file(raw)};
}

void expect_identical_runs(const std::string& scenario) {
  const Outputs a = run_once(scenario, "a");
  const Outputs b = run_once(scenario, "b");
  EXPECT_FALSE(a.summary.empty());
  EXPECT_EQ(a.summary, b.summary);
  EXPECT_EQ(a.report, b.report);
  EXPECT_EQ(a.trace, b.trace);
  // zlib writes no time stamp in the gzip header (gzopen: MTIME 0), so even the compressed bytes
  // repeat.
  EXPECT_EQ(a.trace_gz, b.trace_gz);
}

TEST(Simulate, SameQuickstartSameSummaryReportAndTraceByteForByte) {
  expect_identical_runs("examples/quickstart.yaml");
}

TEST(Simulate, SamePipelineSameSummaryReportAndTraceByteForByte) {
  expect_identical_runs("tests/inputs/good/pipeline.yaml");
}

}  // namespace
}  // namespace stepsim
