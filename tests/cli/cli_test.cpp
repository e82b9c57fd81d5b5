// The program's contract: --help and --version everywhere, results on stdout, exit codes 0/2.
#include <gtest/gtest.h>
#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/cli/cli.hpp"
#include "sim/common/config.hpp"
#include "sim/common/input_error.hpp"
#include "sim/run/resource_estimate.hpp"
#include "sim/scenario/scenario.hpp"
#include "stepsim/version.hpp"
#include "tests/cli_in_process.hpp"
#include "workloads/workload.hpp"

namespace stepsim {
namespace {

using Result = testing::CliResult;

Result run(std::vector<std::string> args) {
  return testing::run_cli(std::move(args));
}

TEST(Cli, HelpListsCommandsAndExitsZero) {
  const Result r = run({"--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("check"), std::string::npos);
  EXPECT_NE(r.out.find("--verbose"), std::string::npos);
}

TEST(Cli, EveryCommandHasHelp) {
  for (const char* command :
       {"run", "compare", "check", "topo", "model", "collective", "traffic"}) {
    const Result r = run({command, "--help"});
    EXPECT_EQ(r.code, 0) << command;
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << command;
  }
}

TEST(Cli, VersionPrintsTheProjectVersion) {
  const Result r = run({"--version"});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find(kVersion), std::string::npos);
}

TEST(Cli, CheckAcceptsAValidScenarioAndAppliesOverrides) {
  const std::string file = std::string(STEPSIM_SOURCE_DIR) + "/tests/inputs/good/minimal.yaml";
  Result r = run({"check", file});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("valid scenario 'ok'"), std::string::npos);
  r = run({"-q", "check", file, "-o", "name=renamed"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("valid scenario 'renamed'"), std::string::npos);
}

TEST(Cli, CheckSaysWhetherTheKernelModelIsCalibrated) {
  const std::string file = std::string(STEPSIM_SOURCE_DIR) + "/examples/quickstart.yaml";
  Result r = run({"check", file, "-o", "compute.device=h100", "-o", "compute.model=kernels"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("kernel-level model, calibrated from kernel measurements"),
            std::string::npos)
      << r.out;
  // Ascend 910C: no public kernel measurement of any part.
  r = run({"check", file, "-o", "compute.device=ascend-910c", "-o", "compute.model=kernels"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("UNCALIBRATED: no public kernel data for its GEMMs, attention, "
                       "memory-bound kernels"),
            std::string::npos)
      << r.out;
}

TEST(Cli, CheckSaysWhatTheScenarioResolvedToAndWhetherItFits) {
  const std::string file = std::string(STEPSIM_SOURCE_DIR) + "/examples/gpt3-175b-superpod.yaml";
  Result r = run({"check", file});
  ASSERT_EQ(r.code, 0) << r.err;
  // GPT-3 175B (Brown et al. 2020): 174.6B parameters; TP8 PP8 DP16 on 128 DGX H100 nodes;
  // 1536 sequences / (dp 16 x micro-batch 1) = 96 micro-batches per replica.
  for (const char* text :
       {"1024 accelerators", "174.6B parameters", "tp8 pp8 dp16 sp", "96 micro-batches of 1",
        "Memory per rank", "stage 7",
        "network   collectives auto, calibrated links, ECMP fabric, PXN on, exact max-min",
        "compute   h100, bf16 (the roofline; compute.model: kernels"})
    EXPECT_NE(r.out.find(text), std::string::npos) << text << "\n" << r.out;
  EXPECT_EQ(r.out.find("EXCEEDS"), std::string::npos) << r.out;
  r = run({"check", file, "-o", "network.idle_tolerance=0.05", "-o", "network.algorithm=ring", "-o",
           "network.pxn=false", "-o", "network.ecmp=hash"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("collectives ring, calibrated links, ECMP hash, PXN off, idle tolerance 5%"),
            std::string::npos)
      << r.out;
  r = run({"check", file, "-o", "network.nccl=\"2.23\""});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("collectives auto as NCCL 2.23.0, calibrated links"), std::string::npos)
      << r.out;
  // Without pipeline or tensor parallelism the model cannot fit one 80 GB H100.
  r = run({"check", file, "-o", "parallelism.tp=1", "-o", "parallelism.pp=1", "-o",
           "parallelism.dp=1024", "-o", "parallelism.vpp=1", "-o", "parallelism.schedule=1f1b",
           "-o", "parallelism.sp=false", "-o", "training.global_batch=1024"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("EXCEEDS"), std::string::npos) << r.out;
}

TEST(Cli, ModelPrintsPublishedParameterCounts) {
  // Llama 3 8B: 8,030,261,248 parameters (meta-llama/Meta-Llama-3-8B checkpoint).
  Result r = run({"model", "llama3-8b", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\"parameters\": 8030261248"), std::string::npos) << r.out;
  r = run({"model", "llama3-7b"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("did you mean 'llama3-8b'"), std::string::npos) << r.err;
}

TEST(Cli, TopoSaysWhichLinksSprayAndWhetherTheDefaultsReachTheFabric) {
  // CloudMatrix384: UB sprays; a 1 GiB AllReduce and AllToAll over 64 NPUs reach most of the
  // 392 GB/s each NPU's UB links carry (no warning). With UB hashed per transfer (what the preset
  // did before it modeled the planes), the check says the defaults do not use the fabric.
  Result r = run({"topo", "cloudmatrix384"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("multipath: ub, die-to-die, on-package spray, the others hash"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("scale-up   64 ranks"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("of 392 GB/s per accelerator"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("less than half"), std::string::npos) << r.out;
  const std::filesystem::path hashed =
      std::filesystem::temp_directory_path() /
      ("stepsim-cm384-hashed-" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(hashed) << "{preset: cloudmatrix384, multipath: {ub: hash, on-package: hash}}\n";
  r = run({"topo", hashed.string(), "--json"});
  std::filesystem::remove(hashed);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\"reachable\": false"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"multipath\": \"hash\""), std::string::npos) << r.out;
  r = run({"topo", "cloudmatrix384", "--no-reach"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find("reachable with the defaults"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace stepsim

namespace stepsim {
namespace {

// The resource guard: a step far too big for the machine is refused at once (exit 2) with the
// estimate and what to change, before anything is generated.
TEST(ResourceGuard, ABillionSequencesAreRefusedWithTheEstimate) {
  const std::string scenario = std::string(STEPSIM_SOURCE_DIR) + "/examples/quickstart.yaml";
  const Result r = run({"run", scenario, "-o", "training.global_batch=1000000000"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("training.global_batch: 1000000000: this step is too big"),
            std::string::npos)
      << r.err;
  // 16 ranks, tp 8, dp 2: 5e8 micro-batches per replica; the estimate says how many operations
  // and how much memory, and what would fit.
  EXPECT_NE(r.err.find("500000000 micro-batches per replica"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("TiB of memory"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("that is global_batch: 122070"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());
}

TEST(ResourceGuard, MaxMemoryLimitsAndIsChecked) {
  const std::string scenario = std::string(STEPSIM_SOURCE_DIR) + "/examples/quickstart.yaml";
  // 64 sequences (32 micro-batches per replica, 8 x the probes) need a few MiB: 1MiB refuses it,
  // the machine's memory does not.
  const Result refused =
      run({"run", scenario, "-o", "training.global_batch=64", "--max-memory", "1MiB"});
  EXPECT_EQ(refused.code, 2);
  EXPECT_NE(refused.err.find("more than 1 MiB (--max-memory)"), std::string::npos) << refused.err;
  EXPECT_EQ(run({"run", scenario, "-o", "training.global_batch=64"}).code, 0);
  const Result bad = run({"run", scenario, "--max-memory", "lots"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--max-memory 'lots'"), std::string::npos) << bad.err;
}

TEST(Scenario, WithoutDpDataParallelismFillsTheTopology) {
  // 16 accelerators (two DGX H100 nodes): tp 4 without dp gives dp 16 / 4 = 4; tp 4 pp 2 gives
  // 2; dp given is kept, and a layout that does not divide the accelerators is still refused.
  auto load = [](const std::string& parallelism) {
    return load_scenario(
        config::Document::parse("topology: dgx-h100-superpod:nodes=2\n"
                                "model: llama3-8b\n"
                                "compute: {device: h100}\n"
                                "parallelism: " +
                                    parallelism +
                                    "\n"
                                    "training: {seq_len: 1024, global_batch: 16}\n",
                                "<test>", std::filesystem::current_path()),
        "test", {});
  };
  EXPECT_EQ(load("{tp: 4}").workload.parallel.dp, 4);
  EXPECT_EQ(load("{tp: 4, pp: 2}").workload.parallel.dp, 2);
  EXPECT_EQ(load("{tp: 8, dp: 2}").workload.parallel.dp, 2);
  EXPECT_THROW(load("{tp: 8, dp: 1}"), InputError);
  EXPECT_THROW(load("{tp: 3}"), InputError);
  // The quickstart names no dp: an override of tp alone keeps every accelerator busy.
  const std::string quickstart = std::string(STEPSIM_SOURCE_DIR) + "/examples/quickstart.yaml";
  EXPECT_EQ(load_scenario(quickstart, {"parallelism.tp=4"}).workload.parallel.dp, 4);
}

TEST(ResourceGuard, EstimateGrowsLinearlyAndBoundsTheSteps) {
  // The estimate extrapolates from p and 2p micro-batches: for a step it can generate, it must
  // equal the real operation count.
  const std::string scenario = std::string(STEPSIM_SOURCE_DIR) + "/examples/quickstart.yaml";
  const Scenario s = load_scenario(scenario, {"training.global_batch=64"});
  const ResourceEstimate e = estimate_resources(s.workload);
  ASSERT_TRUE(e.extrapolated);
  const workloads::Workload w(s.workload);
  std::uint64_t operations = 0;
  for (int rank = 0; rank < w.world_size(); ++rank)
    operations += w.program(rank).ops.size();
  EXPECT_EQ(e.operations, operations);
  EXPECT_GE(e.memory.count(), static_cast<std::int64_t>(w.memory_bytes()));
}

TEST(ResourceGuard, DualPipeEstimateIsExactToo) {
  // DualPipe needs at least 2p micro-batches: the estimate extrapolates from 2p and 4p, and is
  // again the real operation count (operations grow linearly with the micro-batches).
  const std::string scenario = std::string(STEPSIM_SOURCE_DIR) + "/examples/quickstart.yaml";
  const Scenario s = load_scenario(scenario, {"training.global_batch=64", "parallelism.pp=2",
                                              "parallelism.dp=1", "parallelism.schedule=dualpipe"});
  const ResourceEstimate e = estimate_resources(s.workload);
  ASSERT_TRUE(e.extrapolated);
  const workloads::Workload w(s.workload);
  std::uint64_t operations = 0;
  for (int rank = 0; rank < w.world_size(); ++rank)
    operations += w.program(rank).ops.size();
  EXPECT_EQ(e.operations, operations);
}

TEST(ResourceGuard, AnAllToAllOverTensOfThousandsOfRanksIsRefused) {
  // 32,768 ranks: 1.07e9 transfers at 1,100 bytes each, far beyond any machine's memory.
  const Result r = run(
      {"collective", "-t", "dgx-h100-superpod:nodes=4096", "--op", "alltoall", "--sizes", "1GiB"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--op alltoall on 32768 ranks: every rank sends to every other, 1.07e+09 "
                       "transfers needing about 1.07 TiB of memory"),
            std::string::npos)
      << r.err;
  // 512 ranks need about 274 MiB: refused under a 100 MiB limit, with how many ranks would fit
  // (sqrt(100 MiB / 1100 B) = 308.7).
  const Result limited = run({"collective", "-t", "dgx-h100-superpod:nodes=64", "--op", "alltoallv",
                              "--skew", "0", "--max-memory", "100MiB"});
  EXPECT_EQ(limited.code, 2);
  EXPECT_NE(limited.err.find("about 308 ranks fit"), std::string::npos) << limited.err;
}

TEST(ResourceGuard, AnAllToAllTrafficPatternOverTensOfThousandsOfRanksIsRefused) {
  // 32,768 ranks: 1.07e9 flows at 1,000 bytes each, refused before a single flow is made.
  const Result r =
      run({"traffic", "-t", "dgx-h100-superpod:nodes=4096", "-p", "alltoall", "-b", "1MiB"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--pattern alltoall on 32768 ranks: every rank sends to every other, "
                       "1.07e+09 flows needing about"),
            std::string::npos)
      << r.err;
  // 512 ranks need about 250 MiB: refused under a 100 MiB limit, with how many ranks would fit
  // (sqrt(100 MiB / 1000 B) = 323.8); the other patterns grow with n and are never refused.
  const Result limited = run({"traffic", "-t", "dgx-h100-superpod:nodes=64", "-p", "alltoall", "-n",
                              "512", "--max-memory", "100MiB"});
  EXPECT_EQ(limited.code, 2);
  EXPECT_NE(limited.err.find("about 323 ranks fit"), std::string::npos) << limited.err;
  EXPECT_EQ(run({"traffic", "-t", "dgx-h100-superpod:nodes=64", "-p", "ring", "-n", "512",
                 "--max-memory", "100MiB"})
                .code,
            0);
}

// Progress goes to stderr only: the results on stdout are the same bytes with and without it.
TEST(Progress, NeverReachesStdout) {
  const std::string scenario = std::string(STEPSIM_SOURCE_DIR) + "/examples/quickstart.yaml";
  std::ostringstream out, err, plain_out, plain_err;
  cli::Environment terminal;
  terminal.err_is_terminal = true;
  terminal.progress_after_s = 0;  // show it from the first update
  // 64 micro-batches per replica: about 8e5 operations, so the executor reports progress (every
  // 2^18 operations) a few times.
  const std::vector<std::string> args = {"run", scenario, "-o", "training.global_batch=128"};
  ASSERT_EQ(cli::run(args, out, err, terminal), 0);
  ASSERT_EQ(cli::run(args, plain_out, plain_err), 0);
  EXPECT_NE(err.str().find("stepsim: simulating: "), std::string::npos);
  EXPECT_NE(err.str().find("s left"), std::string::npos);
  EXPECT_EQ(out.str(), plain_out.str());
  EXPECT_EQ(out.str().find('\r'), std::string::npos);
  // -q: no progress at all.
  std::ostringstream quiet_out, quiet_err;
  std::vector<std::string> quiet = args;
  quiet.insert(quiet.begin(), "-q");
  ASSERT_EQ(cli::run(quiet, quiet_out, quiet_err, terminal), 0);
  EXPECT_EQ(quiet_err.str().find("simulating"), std::string::npos);
}

// Every long command's progress line: on stderr of a terminal only, stdout the same bytes.
void expect_progress_on_stderr_only(const std::vector<std::string>& args,
                                    const std::string& progress_text) {
  std::ostringstream out, err, plain_out, plain_err;
  cli::Environment terminal;
  terminal.err_is_terminal = true;
  terminal.progress_after_s = 0;
  ASSERT_EQ(cli::run(args, out, err, terminal), 0) << err.str();
  ASSERT_EQ(cli::run(args, plain_out, plain_err), 0);
  EXPECT_NE(err.str().find(progress_text), std::string::npos) << err.str();
  EXPECT_NE(err.str().find(" s left"), std::string::npos) << err.str();
  EXPECT_EQ(plain_err.str().find(progress_text), std::string::npos) << plain_err.str();
  EXPECT_EQ(out.str(), plain_out.str());
  EXPECT_EQ(out.str().find('\r'), std::string::npos);
  std::vector<std::string> quiet = args;
  quiet.insert(quiet.begin(), "-q");
  std::ostringstream quiet_out, quiet_err;
  ASSERT_EQ(cli::run(quiet, quiet_out, quiet_err, terminal), 0);
  EXPECT_EQ(quiet_err.str().find(progress_text), std::string::npos) << quiet_err.str();
}

TEST(Progress, CollectiveSweepShowsTheSizeAndItsTransfers) {
  // 64 ranks' AllToAll: 4,032 transfers a size, so the runner reports every 4,096 (the second
  // size on), and each size ends with a line.
  expect_progress_on_stderr_only(
      {"collective", "-t", "dgx-h100-superpod:nodes=8", "--op", "alltoall", "-s", "1MiB:4MiB"},
      "stepsim: size 3 of 3 (4 MiB): ");
}

TEST(Progress, TrafficShowsTheFlowsFinished) {
  // 128 ranks' all-to-all: 16,256 flows, a line every 4,096 finished.
  expect_progress_on_stderr_only(
      {"traffic", "-t", "dgx-h100-superpod:nodes=16", "-p", "alltoall", "-b", "1MiB"},
      "stepsim: simulating: 4096 of 16256 flows finished");
}

TEST(Progress, CompareShowsTheRunAndItsOperations) {
  const std::string scenario = std::string(STEPSIM_SOURCE_DIR) + "/examples/quickstart.yaml";
  expect_progress_on_stderr_only(
      {"compare", scenario, "-o", "training.global_batch=128", "--variant", "parallelism.tp=8",
       "--variant", "parallelism.tp=4 parallelism.dp=4"},
      "stepsim: comparing: run 2 of 2 (");
}

}  // namespace
}  // namespace stepsim
