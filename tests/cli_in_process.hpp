// `stepsim ARGS...` run in-process for the tests (cli::run): its exit code, stdout and stderr.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "sim/cli/cli.hpp"

namespace stepsim::testing {

struct CliResult {
  int code;
  std::string out;
  std::string err;
};

inline CliResult run_cli(std::vector<std::string> args) {
  std::ostringstream out, err;
  const int code = cli::run(args, out, err);
  return {code, out.str(), err.str()};
}

}  // namespace stepsim::testing
