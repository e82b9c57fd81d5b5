#include "sim/cli/progress_line.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <ostream>
#include <string>

namespace stepsim::cli {
namespace {

// "about 35 s left": what is left of work of which `fraction_done` took `elapsed_s`, at the rate
// so far; "estimating" when nothing is done yet.
std::string time_left(double elapsed_s, double fraction_done) {
  if (!(fraction_done > 0.0)) return "estimating";
  const double fraction = std::min(fraction_done, 1.0);
  return fmt::format("about {:.0f} s left", elapsed_s * (1.0 - fraction) / fraction);
}

}  // namespace

ProgressLine::ProgressLine(Context& ctx)
    : ctx_(ctx),
      enabled_(ctx.err_is_terminal && ctx.log.should_log(spdlog::level::info)),
      started_(std::chrono::steady_clock::now()) {}

double ProgressLine::elapsed_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
}

bool ProgressLine::due() const {
  if (!enabled_) return false;
  const double elapsed = elapsed_s();
  if (elapsed < ctx_.progress_after_s) return false;
  // A line a tenth of a second old is fresh enough (tests show every update: progress_after_s 0).
  return ctx_.progress_after_s <= 0.0 || last_shown_s_ < 0.0 || elapsed - last_shown_s_ >= 0.1;
}

void ProgressLine::show(std::string_view text) {
  if (!due()) return;
  last_shown_s_ = elapsed_s();
  shown_ = true;
  ctx_.err << "\rstepsim: " << text << "\x1b[K" << std::flush;
}

void ProgressLine::show_done(std::string_view what, double fraction, double since_s,
                             std::string_view after) {
  if (!due()) return;
  const double elapsed = elapsed_s();
  show(fmt::format("{}, {:.0f} s, {}{}", what, elapsed, time_left(elapsed - since_s, fraction),
                   after));
}

void ProgressLine::clear() {
  if (!shown_) return;
  shown_ = false;
  ctx_.err << "\r\x1b[K" << std::flush;
}

}  // namespace stepsim::cli
