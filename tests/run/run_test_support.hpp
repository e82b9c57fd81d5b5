// Helpers for the `stepsim run` tests: run the program in-process, read files (plain or gzip),
// and name per-test output files.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace stepsim::testing {

struct CliResult {
  int code = 0;
  std::string out;
  std::string err;
};

// `stepsim args...`, in-process (sim/cli/cli.hpp).
CliResult run_stepsim(const std::vector<std::string>& args);

// A file's bytes; a name ending in ".gz" is decompressed.
std::string read_file(const std::filesystem::path& path);

// A fresh path for an output of the running test: <build>/tests/run/output/<test>.<suffix>.
std::filesystem::path output_path(const std::string& suffix);

// A file of the source tree, relative to the repository root.
std::string source_file(const std::string& relative);

}  // namespace stepsim::testing
