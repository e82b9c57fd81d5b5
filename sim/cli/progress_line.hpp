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
  // Shows "stepsim: TEXT" as it is (a line with no fraction of work to go by).
  void show(std::string_view text);
  // Shows "stepsim: WHAT, N s, about M s left" and then `after`, for work of which `fraction` is
  // done since `since_s` (elapsed_s() when it started; N counts from the line's start).
  void show_done(std::string_view what, double fraction, double since_s = 0.0,
                 std::string_view after = "");
  // Takes the line away (nothing when none was shown).
  void clear();

 private:
  Context& ctx_;
  bool enabled_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point started_;
  double last_shown_s_ = -1.0;
};

}  // namespace stepsim::cli
