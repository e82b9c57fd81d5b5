// The program's contract: --help and --version everywhere, results on stdout, exit codes 0/2.
#include <gtest/gtest.h>
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

TEST(Cli, ModelPrintsPublishedParameterCounts) {
  // Llama 3 8B: 8,030,261,248 parameters (meta-llama/Meta-Llama-3-8B checkpoint).
  Result r = run({"model", "llama3-8b", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\"parameters\": 8030261248"), std::string::npos) << r.out;
  r = run({"model", "llama3-7b"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("did you mean 'llama3-8b'"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace stepsim
