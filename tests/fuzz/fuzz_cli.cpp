// The command line: the input is split at newlines into arguments and run in-process as `stepsim
// ARGS...`. Arguments that name a path outside the harness's directory (any '/') and the
// `validate` command (it writes docs/validation.md) are dropped, so the fuzzer cannot write files
// anywhere; everything else, options and values, is as given.
#include <sstream>
#include <string>
#include <vector>

#include "sim/cli/cli.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace stepsim;
  std::vector<std::string> args;
  std::string current;
  for (char c : fuzz::as_text(data, size)) {
    if (c == '\n') {
      args.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  args.push_back(current);
  std::vector<std::string> kept;
  for (const std::string& a : args) {
    if (a.find('/') != std::string::npos || a == "validate") continue;
    kept.push_back(a);
  }
  // Relative paths land in the harness's directory, and only while the command runs: libFuzzer
  // opens its corpus files by the (relative) paths it was given, between runs. (Left there, every
  // input of a campaign after the first read as empty: no coverage, "no interesting inputs".)
  const std::filesystem::path before = std::filesystem::current_path();
  std::filesystem::current_path(fuzz::work_dir());
  std::ostringstream out, err;
  const int code = cli::run(kept, out, err);
  std::filesystem::current_path(before);
  // 0 success, 2 bad input, 3 a validation beyond target; 1 is an internal error: a bug.
  if (code == 1) std::abort();
  return 0;
}
