// The progress line a long command shows on stderr: one line rewritten in place ('\r', then the
// text, then ESC[K to clear what a longer line left), only when stderr is a terminal and info
// messages are shown (never with -q, never on stdout), from Context::progress_after_s of wall time
// on, at most ten times a second. Cleared when the command is done (clear(), or the destructor).
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "sim/cli/command.hpp"

namespace stepsim::cli {

class ProgressLine {
 public:
  explicit ProgressLine(Context& ctx);
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;
  ~ProgressLine() { clear(); }

  // Whether anything will ever be shown (a terminal, info messages on).
  bool enabled() const { return enabled_; }
  // Wall time since the line was made, seconds.
  double elapsed_s() const;
  // Whether show() would print now (so that a caller formats its text only then).
  bool due() const;
  // Shows "stepsim: TEXT" (the caller says how much is done, the time so far and the time left:
  // time_left below).
  void show(std::string_view text);
  // Takes the line away (nothing when none was shown).
  void clear();

 private:
  Context& ctx_;
  bool enabled_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point started_;
  double last_shown_s_ = -1.0;
};

// "about 35 s left": what is left of work of which `fraction_done` took `elapsed_s`, at the rate
// so far; "estimating" when nothing is done yet.
std::string time_left(double elapsed_s, double fraction_done);

}  // namespace stepsim::cli
