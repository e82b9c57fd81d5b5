// The `stepsim` program as a function, so tests can run it in-process.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace stepsim::output {
class OutputGuard;
}

namespace stepsim::cli {

// Where the program runs.
struct Environment {
  bool err_is_terminal = false;  // progress lines only on a terminal
  // Output files are written whole or not at all; the guard (the program's, see main.cpp) learns
  // of their temporary files so that a signal can remove them.
  output::OutputGuard* output_guard = nullptr;
  double progress_after_s = 1.0;  // progress lines start after this much wall time
};

// Runs `stepsim args...` (args excludes the program name). Returns the exit code: 0 success, 2 bad
// input (usage, configuration, files), 1 internal error. Never calls exit().
int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
        const Environment& environment = {});

}  // namespace stepsim::cli
