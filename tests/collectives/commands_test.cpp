// `stepsim collective` and `stepsim traffic` end to end: output shape, and bad input -> exit 2
// with a message that names the bad value.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "sim/cli/cli.hpp"
#include "tests/cli_in_process.hpp"

namespace stepsim {
namespace {

using Result = testing::CliResult;

Result run(std::vector<std::string> args) {
  return testing::run_cli(std::move(args));
}

void expect_input_error(std::vector<std::string> args, const std::string& message) {
  const Result r = run(args);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find(message), std::string::npos) << "stderr: " << r.err;
}

std::string write_file(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path) << text;
  return path.string();
}

TEST(CollectiveCommand, JsonRowsDoubleInSizeAndCarryBusbw) {
  const Result r = run({"collective", "-t", "dgx-h100", "--ranks", "8", "--algo", "ring", "--sizes",
                        "1MiB:4MiB", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["rows"].size(), 3u);  // 1, 2, 4 MiB
  EXPECT_EQ(j["rows"][2]["size_bytes"], 4 << 20);
  for (const auto& row : j["rows"]) {
    // nccl-tests: busbw = algbw x 2(n-1)/n for AllReduce; algbw = size / time.
    const double algbw = row["size_bytes"].get<double>() / row["time_us"].get<double>() * 1e-3;
    EXPECT_NEAR(row["algbw_GBps"].get<double>(), algbw, algbw * 1e-9);
    EXPECT_NEAR(row["busbw_GBps"].get<double>(), algbw * 14 / 8, algbw * 1e-9);
  }
}

TEST(CollectiveCommand, TablePrintsTheNcclTestsColumns) {
  const Result r = run({"collective", "-t", "dgx-a100", "--op", "allgather", "--sizes", "1GiB"});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* column : {"size", "count", "type", "time", "algbw", "busbw", "float"})
    EXPECT_NE(r.out.find(column), std::string::npos) << column;
}

TEST(CollectiveCommand, BadInputExitsTwoWithAClearMessage) {
  expect_input_error({"collective", "-t", "dgx-h100", "--op", "allreduc"},
                     "did you mean 'allreduce'");
  expect_input_error({"collective", "-t", "dgx-h100", "--algo", "rign"}, "did you mean 'ring'");
  expect_input_error({"collective", "-t", "dgx-h100", "--ranks", "16"}, "only 8 accelerators");
  expect_input_error({"collective", "-t", "dgx-h100", "--ranks", "0-3,9"}, "rank 9");
  expect_input_error({"collective", "-t", "dgx-h100", "--sizes", "8:1024"}, "--sizes '8:1024'");
  expect_input_error({"collective", "-t", "dgx-a100", "--algo", "in-switch", "--sizes", "1MiB"},
                     "no switch that reduces in the network");
  expect_input_error({"collective", "-t", "dgx-h100", "--op", "alltoall", "--algo", "tree"},
                     "AllReduce only");
  expect_input_error({"collective", "-t", "dgx-h100", "--op", "alltoall", "--pxn", "yes"},
                     "network.pxn: expected true or false, got 'yes'");
}

TEST(CollectiveCommand, AllToAllvWithSkewZeroIsTheAllToAll) {
  const Result v = run({"collective", "-t", "dgx-h100", "--op", "alltoallv", "--skew", "0",
                        "--sizes", "1GiB", "--json"});
  const Result a =
      run({"collective", "-t", "dgx-h100", "--op", "alltoall", "--sizes", "1GiB", "--json"});
  ASSERT_EQ(v.code, 0) << v.err;
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_EQ(nlohmann::json::parse(v.out)["rows"][0]["time_us"],
            nlohmann::json::parse(a.out)["rows"][0]["time_us"]);
}

TEST(CollectiveCommand, AllToAllvSkewLoadsTheHotReceiver) {
  // Skew 1 on the 8 GPUs of a DGX H100: receiver 0 gets 1/H8 = 840/2283 of every buffer
  // (H8 = 1 + 1/2 + ... + 1/8 = 761/280). Its NVLink ingress (calibrated 370 GB/s) carries
  // 7 x 1 GiB x 280/761 from the other ranks, the bottleneck of the operation:
  // 7 x 1073741824 x 280/761 / 370e9 = 7.4734 ms, plus the calibrated latencies (~10 us) and
  // NCCL's p2p pipeline fill, one 512 KiB chunk at a channel's 20.6 GB/s (25.45 us, nccl_p2p.hpp).
  const Result r = run({"collective", "-t", "dgx-h100", "--op", "alltoallv", "--skew", "1",
                        "--sizes", "1GiB", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto row = nlohmann::json::parse(r.out)["rows"][0];
  const double fill_us = 524288.0 / 20.6e9 * 1e6;
  const double bottleneck_us = 7.0 * 1073741824.0 * 280.0 / 761.0 / 370e9 * 1e6;
  EXPECT_GT(row["time_us"].get<double>(), bottleneck_us + fill_us);
  EXPECT_LT(row["time_us"].get<double>(), bottleneck_us + fill_us + 15.0);
  EXPECT_EQ(row["size_bytes"], 1 << 30);  // every row sums to the size
}

TEST(CollectiveCommand, AllToAllvMatrixFileRunsAsGivenOrScaled) {
  // 0 -> 1 carries 1 GiB and nothing else moves: one NVLink flow at the calibrated 370 GB/s (its
  // 32 NCCL channels could carry 659 GB/s), plus one 512 KiB chunk's fill at 20.6 GB/s.
  const std::string file = write_file("stepsim_a2av.csv", "0,1GiB\n0,0\n");
  const Result r = run({"collective", "-t", "dgx-h100", "--ranks", "2", "--op", "alltoallv",
                        "--matrix", file, "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto rows = nlohmann::json::parse(r.out)["rows"];
  ASSERT_EQ(rows.size(), 1u);  // no --sizes: the matrix as given
  EXPECT_EQ(rows[0]["size_bytes"], 1 << 30);
  const double drain_us = 1073741824.0 / 370e9 * 1e6 + 524288.0 / 20.6e9 * 1e6;
  EXPECT_GT(rows[0]["time_us"].get<double>(), drain_us);
  EXPECT_LT(rows[0]["time_us"].get<double>(), drain_us + 15.0);
  // With --sizes the matrix is scaled: 1 MiB and 2 MiB rows.
  const Result s = run({"collective", "-t", "dgx-h100", "--ranks", "2", "--op", "alltoallv",
                        "--matrix", file, "--sizes", "1MiB:2MiB", "--json"});
  ASSERT_EQ(s.code, 0) << s.err;
  const auto scaled = nlohmann::json::parse(s.out)["rows"];
  ASSERT_EQ(scaled.size(), 2u);
  EXPECT_EQ(scaled[1]["size_bytes"], 2 << 20);
}

TEST(CollectiveCommand, AllToAllvBadInputExitsTwo) {
  expect_input_error({"collective", "-t", "dgx-h100", "--op", "alltoallv"},
                     "--matrix FILE.csv (n x n sizes, row = sender) or --skew S");
  expect_input_error({"collective", "-t", "dgx-h100", "--op", "alltoallv", "--skew", "-1"},
                     "skew -1");
  expect_input_error({"collective", "-t", "dgx-h100", "--op", "allreduce", "--skew", "1"},
                     "apply to --op alltoallv, not --op allreduce");
  const std::string file = write_file("stepsim_a2av_bad.csv", "0,1GiB\n0,0\n");
  expect_input_error(
      {"collective", "-t", "dgx-h100", "--ranks", "4", "--op", "alltoallv", "--matrix", file},
      "row 0 has 2 columns; the group has 4 ranks");
  expect_input_error(
      {"collective", "-t", "dgx-h100", "--op", "alltoallv", "--matrix", "/nonexistent/m.csv"},
      "/nonexistent/m.csv: cannot read the matrix file");
}

TEST(TrafficCommand, JsonListsFlowsAndLinks) {
  const Result r = run({"traffic", "-t", "dgx-h100", "--pattern", "incast", "--ranks", "3",
                        "--bytes", "1GiB", "--links", "line-rate", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["flows"].size(), 2u);
  // Two 1 GiB flows into gpu0's 450 GB/s NVLink share it: both finish at 2 GiB / 450 GB/s plus
  // the route latency (2 x 150 ns).
  const double expected = 2.0 * (1 << 30) / 450e9 + 300e-9;
  for (const auto& f : j["flows"]) {
    EXPECT_EQ(f["start_s"], 0.0);
    EXPECT_NEAR(f["finish_s"].get<double>(), expected, expected * 1e-6);
  }
  bool saturated = false;
  for (const auto& l : j["links"])
    if (l["link"] == "node0.nvswitch -> node0.gpu0")
      saturated = l["utilization"].get<double>() > 0.99;
  EXPECT_TRUE(saturated);
}

TEST(TrafficCommand, FlowsFileErrorsNameTheLine) {
  const std::string unknown = write_file("stepsim_unknown.csv",
                                         "src,dst,bytes,start\n"
                                         "node0.gpu0,node0.gpu1,1MiB,0\n"
                                         "node0.gpu0,node0.gpu9,1MiB,0\n");
  expect_input_error({"traffic", "-t", "dgx-h100", "--flows", unknown},
                     unknown + ":3: dst 'node0.gpu9' is not a node");
  const std::string negative =
      write_file("stepsim_negative.csv", "src,dst,bytes,start\nnode0.gpu0,node0.gpu1,-5,0\n");
  expect_input_error({"traffic", "-t", "dgx-h100", "--flows", negative}, negative + ":2: bytes");
  const std::string no_unit =
      write_file("stepsim_no_unit.csv", "src,dst,bytes,start\nnode0.gpu0,node0.gpu1,1MiB,5\n");
  expect_input_error({"traffic", "-t", "dgx-h100", "--flows", no_unit}, no_unit + ":2: start");
  expect_input_error({"traffic", "-t", "dgx-h100", "--pattern", "permutaton"},
                     "did you mean 'permutation'");
  expect_input_error(
      {"traffic", "-t", "dgx-h100", "--pattern", "alltoall", "--idle-tolerance", "0.6"},
      "--idle-tolerance");
}

}  // namespace
}  // namespace stepsim
