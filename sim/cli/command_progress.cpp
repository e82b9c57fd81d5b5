#include "sim/cli/command_progress.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <ostream>

namespace stepsim::cli {

void show_sweep_progress(ProgressLine& line, const app::SweepProgress& p, double& started_s) {
  if (p.done == 0) started_s = line.elapsed_s();
  if (p.done == 0 || !line.due()) return;
  const double fraction =
      p.transfers == 0 ? 0.0 : static_cast<double>(p.done) / static_cast<double>(p.transfers);
  const std::size_t after = p.sizes - p.index - 1;
  line.show_done(fmt::format("size {} of {} ({}): {:.0f}% of its {} transfers", p.index + 1,
                             p.sizes, format_bytes(p.size), 100.0 * fraction, p.transfers),
                 fraction, started_s,
                 after == 0
                     ? " for it"
                     : fmt::format(" for it, then {} larger size{}", after, after == 1 ? "" : "s"));
}

void show_compare_progress(ProgressLine& line, const app::CompareProgress& p, double& started_s) {
  if (p.starting) started_s = line.elapsed_s();
  if (p.starting || !line.due()) return;
  if (p.search != nullptr) {
    line.show(fmt::format(
        "comparing: searching {} of {} ({}): {} simulated, {} running, at most {} to go, {:.0f} s",
        p.index + 1, p.count, p.label, p.search->simulated, p.search->running,
        p.search->left_at_most, line.elapsed_s()));
    return;
  }
  const double fraction = static_cast<double>(p.done) / static_cast<double>(p.total);
  const std::size_t after = p.count - p.index - 1;
  line.show_done(fmt::format("comparing: run {} of {} ({}): {:.0f}% of its {} operations",
                             p.index + 1, p.count, p.label, 100.0 * fraction, p.total),
                 fraction, started_s,
                 after == 0 ? " for it" : fmt::format(" for it, then {} more", after));
}

SearchProgressLine::SearchProgressLine(Context& ctx, std::chrono::steady_clock::time_point started,
                                       unsigned threads)
    : ctx_(ctx),
      started_(started),
      threads_(threads),
      enabled_(ctx.err_is_terminal && ctx.log.should_log(spdlog::level::info)) {}

double SearchProgressLine::elapsed_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
}

void SearchProgressLine::show(const search::SearchProgress& p) {
  const double elapsed = elapsed_s();
  if (first_) {
    ctx_.log.debug("layouts enumerated, checked and bounded in {:.1f} s", elapsed);
    first_ = false;
  }
  const std::string best = p.best == Time::max() ? std::string("-") : format_time(p.best);
  ctx_.log.debug("{} simulated, {} running, best {}, at {:.1f} s", p.simulated, p.running, best,
                 elapsed);
  if (!enabled_ || elapsed < ctx_.progress_after_s) return;
  shown_ = true;
  std::string left = "estimating";
  if (p.simulated > 0) {
    const double each = elapsed / static_cast<double>(p.simulated);
    left = fmt::format(
        "at most about {:.0f} s left",
        each * static_cast<double>(p.left_at_most + p.running) / static_cast<double>(threads_));
  }
  ctx_.err << fmt::format(
                  "\rstepsim: searching: {} simulated, {} running, at most {} to go, best {}, "
                  "{:.0f} s, {}\x1b[K",
                  p.simulated, p.running, p.left_at_most, best, elapsed, left)
           << std::flush;
}

void SearchProgressLine::clear() {
  if (shown_) ctx_.err << "\r\x1b[K" << std::flush;
}

}  // namespace stepsim::cli
