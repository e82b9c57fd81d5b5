// The `stepsim` program as a function, so tests can run it in-process.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace stepsim::output {
class OutputGuard;
}

namespace stepsim::cli {

// Runs `stepsim args...` (args excludes the program name). Returns the exit code: 0 success, 2 bad
// input (usage, configuration, files), 1 internal error. Never calls exit(). Output files are
// written whole or not at all; `output_guard` (the program's, see main.cpp) learns of their
// temporary files so that a signal can remove them.
int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
        bool err_is_terminal = false, output::OutputGuard* output_guard = nullptr);

}  // namespace stepsim::cli
