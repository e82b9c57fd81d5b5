// The validation case file and its lookups into the published data (validation/data/).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/common/input_error.hpp"
#include "sim/validation/validation_case.hpp"
#include "sim/validation/validation_report.hpp"
#include "sim/validation/validation_run.hpp"

namespace stepsim::validation {
namespace {

const std::filesystem::path kCases =
    std::filesystem::path(STEPSIM_SOURCE_DIR) / "validation" / "cases.yaml";

const Table& table(const CaseFile& f, std::string_view name) {
  for (const Table& t : f.tables)
    if (t.name == name) return t;
  throw std::logic_error("no table");
}

TEST(ValidationCases, EveryPublishedFigureHasACase) {
  // validation/data/nccl_busbw.yaml: 7 single_node busbw + 2 x 5 nvls_ramp + 9 ndmv4 busbw at
  // 1 GiB + 2 per_nic = 28 large-message rows, 9 ndmv4 latencies; megatron: 9 rows.
  const CaseFile f = load_cases(kCases);
  EXPECT_EQ(table(f, "nccl-busbw").cases.size(), 28u);
  EXPECT_EQ(table(f, "nccl-latency").cases.size(), 9u);
  EXPECT_EQ(table(f, "megatron").cases.size(), 9u);
  EXPECT_DOUBLE_EQ(*table(f, "nccl-busbw").target, 0.05);
  EXPECT_DOUBLE_EQ(*table(f, "megatron").target, 0.10);
  EXPECT_FALSE(table(f, "nccl-latency").target.has_value());
}

TEST(ValidationCases, PublishedFiguresComeFromTheDataFiles) {
  const CaseFile f = load_cases(kCases);
  const Table& busbw = table(f, "nccl-busbw");
  // single_node.0: 8x H100 ring AllReduce, busbw 370 (gtc24).
  EXPECT_DOUBLE_EQ(busbw.cases[0].published.value, 370.0);
  EXPECT_EQ(busbw.cases[0].published.reference, "nccl_busbw.yaml single_node.0.busbw");
  // per_nic.results.1: "46-48" is a range; compared with its midpoint.
  EXPECT_EQ(busbw.cases.back().published.printed, "46-48");
  EXPECT_DOUBLE_EQ(busbw.cases.back().published.value, 47.0);
  // megatron rows.8: 462B, 459.9 TFLOP/s per GPU.
  EXPECT_DOUBLE_EQ(table(f, "megatron").cases[8].published.value, 459.9);
}

std::filesystem::path write_temp(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path) << text;
  return path;
}

// The message of load_cases on a case file of one collective case whose published figure is
// `published` and whose last keys are `extra` (after `size: 1KiB`), over a data file of one row.
// The files are named after the test: ctest runs the tests of this file side by side.
std::string collective_case_error(const std::string& published, const std::string& extra) {
  const std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  const std::string data = "stepsim_val_data_" + test + ".yaml";
  write_temp(data, "rows: [{x: 1}]\n");
  const auto cases =
      write_temp("stepsim_val_cases_" + test + ".yaml",
                 "data: {d: " + data +
                     "}\n"
                     "tables:\n"
                     "  - {name: t, title: T, metric: m, target: 0.1, cases: [\n"
                     "      {figure: f, published: '" +
                     published +
                     "', measure: time_us,\n"
                     "       topology: dgx-h100, ranks: '8', op: allreduce, algo: ring,\n"
                     "       size: 1KiB" +
                     extra + "}]}\n");
  try {
    load_cases(cases);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ValidationCases, AMissingFigureIsAnInputErrorNamingIt) {
  const std::string what = collective_case_error("d:rows.3.x", "");
  EXPECT_NE(what.find("'3' is not an index of the 1 entries"), std::string::npos) << what;
}

TEST(ValidationRun, ACollectiveCaseReproducesItsClosedForm) {
  // 8x H100 ring AllReduce of 16 GiB on calibrated NVLink4 (370 GB/s effective): an uncontended
  // ring's busbw is the per-link bandwidth, so 370 GB/s less the latency share (< 0.1%).
  const CaseFile f = load_cases(kCases);
  const double busbw = simulate_case(table(f, "nccl-busbw").cases[0]);
  EXPECT_NEAR(busbw, 370.0, 0.5);
}

// The serving tables: 7 latency and 5 throughput rows, reported (no target), each a serving
// scenario with its overrides.
TEST(ValidationCases, ServingRowsAreServingScenariosWithTheirOverrides) {
  const CaseFile f = load_cases(kCases);
  const Table& latency = table(f, "serving-latency");
  const Table& throughput = table(f, "serving-throughput");
  EXPECT_EQ(latency.cases.size(), 7u);
  EXPECT_EQ(throughput.cases.size(), 5u);
  EXPECT_FALSE(latency.target.has_value());
  EXPECT_EQ(latency.cases[1].measure, Measure::kTtftMs);
  EXPECT_EQ(latency.cases[1].overrides, std::vector<std::string>{"serving.prefill.prompt=128"});
  EXPECT_DOUBLE_EQ(latency.cases[1].published.value, 26.0);
  EXPECT_EQ(throughput.cases[4].measure, Measure::kOutputTokensPerS);
  EXPECT_DOUBLE_EQ(throughput.cases[4].published.value, 1943.0);
}

// A serving row is the figure `stepsim serve` reports: gpt-fast's Llama 2 70B TP8 decode on
// A100 (the latency table's row 5).
TEST(ValidationRun, AServingCaseIsWhatServeReports) {
  const CaseFile f = load_cases(kCases);
  const Case& c = table(f, "serving-latency").cases[4];
  std::string setup;
  const double tpot_ms = simulate_case(c, &setup);
  EXPECT_NE(setup.find("decode, tp8 dp1, batch 1, 100 context on selene:nodes=1"),
            std::string::npos)
      << setup;
  // The same pass read from the cache gives the same figure, as tokens/s per accelerator.
  ServingPassCache cache;
  Case tokens = c;
  tokens.measure = Measure::kOutputTokensPerS;
  EXPECT_DOUBLE_EQ(simulate_case(c, nullptr, &cache), tpot_ms);
  EXPECT_NEAR(simulate_case(tokens, nullptr, &cache), 1000.0 / tpot_ms / 8, 1e-9);
  EXPECT_EQ(cache.figures.size(), 1u);
}

TEST(ValidationCases, ACollectiveCaseHasNoOverrides) {
  const std::string what = collective_case_error("d:rows.0.x", ", overrides: ['a=1']");
  EXPECT_NE(what.find("overrides"), std::string::npos) << what;
  EXPECT_NE(what.find("no scenario file"), std::string::npos) << what;
}

TEST(ValidationRun, FailuresAreRowsBeyondTwiceTheTarget) {
  Table t;
  t.target = 0.05;
  Case ok, bad, gap, stale;
  gap.known_gap = "reason";
  stale.known_gap = "reason";
  TableResult r;
  r.source = &t;
  r.rows = {{&ok, "", 0, 0.09}, {&bad, "", 0, -0.11}, {&gap, "", 0, 0.5}, {&stale, "", 0, 0.02}};
  const auto failures = r.failures();
  ASSERT_EQ(failures.size(), 2u);  // beyond 10% without a known gap; a known gap within 10%
  EXPECT_EQ(failures[0]->source, &bad);
  EXPECT_EQ(failures[1]->source, &stale);
}

}  // namespace
}  // namespace stepsim::validation
