// The program's contract: --help and --version everywhere, results on stdout, exit codes 0/2.
#include <gtest/gtest.h>
#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/cli/cli.hpp"
#include "stepsim/version.hpp"

namespace stepsim {
namespace {

struct Result {
  int code;
  std::string out;
  std::string err;
};

Result run(std::vector<std::string> args) {
  std::ostringstream out, err;
  const int code = cli::run(args, out, err);
  return {code, out.str(), err.str()};
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

TEST(Cli, CheckSaysWhatTheScenarioResolvedToAndWhetherItFits) {
  const std::string file = std::string(STEPSIM_SOURCE_DIR) + "/examples/gpt3-175b-superpod.yaml";
  Result r = run({"check", file});
  ASSERT_EQ(r.code, 0) << r.err;
  // GPT-3 175B (Brown et al. 2020): 174.6B parameters; TP8 PP8 DP16 on 128 DGX H100 nodes;
  // 1536 sequences / (dp 16 x micro-batch 1) = 96 micro-batches per replica.
  for (const char* text :
       {"1024 accelerators", "174.6B parameters", "tp8 pp8 dp16 sp", "96 micro-batches of 1",
        "Memory per rank", "stage 7",
        "network   collectives auto, calibrated links, ECMP fabric, PXN on, exact max-min"})
    EXPECT_NE(r.out.find(text), std::string::npos) << text << "\n" << r.out;
  EXPECT_EQ(r.out.find("EXCEEDS"), std::string::npos) << r.out;
  r = run({"check", file, "-o", "network.idle_tolerance=0.05", "-o", "network.algorithm=ring", "-o",
           "network.pxn=false", "-o", "network.ecmp=hash"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("collectives ring, calibrated links, ECMP hash, PXN off, idle tolerance 5%"),
            std::string::npos)
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
