#include <pthread.h>
#include <unistd.h>
#include <atomic>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>

#include "sim/cli/cli.hpp"
#include "sim/output/atomic_output.hpp"

namespace {

// SIGINT and SIGTERM are blocked in every thread and taken by one watcher thread with sigwait(),
// so no code runs in a signal handler. On a signal the watcher deletes the temporary files of
// every output in progress (an earlier file at a target stays as it was), says so, and ends the
// process with 128 + the signal's number (130 for SIGINT, 143 for SIGTERM). The outputs are
// renamed into place under the guard's lock, so a file is either complete or not there.
class SignalWatcher {
 public:
  explicit SignalWatcher(stepsim::output::OutputGuard& guard) {
    sigemptyset(&signals_);
    sigaddset(&signals_, SIGINT);
    sigaddset(&signals_, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals_, nullptr);
    thread_ = std::thread([this, &guard] { watch(guard); });
  }
  // After the run: wakes the watcher with a signal of its own and joins it. A signal from
  // outside that arrives now finds every output already complete.
  ~SignalWatcher() {
    finished_ = true;
    pthread_kill(thread_.native_handle(), SIGTERM);
    thread_.join();
  }
  SignalWatcher(const SignalWatcher&) = delete;
  SignalWatcher& operator=(const SignalWatcher&) = delete;

 private:
  void watch(stepsim::output::OutputGuard& guard) {
    int signal = 0;
    if (sigwait(&signals_, &signal) != 0 || finished_) return;
    guard.remove_all();
    const std::string message =
        std::string("\nstepsim: ") + (signal == SIGINT ? "interrupted" : "terminated") +
        "; no output file was written (files from earlier runs are unchanged)\n";
    [[maybe_unused]] const auto written = ::write(STDERR_FILENO, message.data(), message.size());
    std::_Exit(128 + signal);
  }

  sigset_t signals_{};
  std::atomic<bool> finished_{false};
  std::thread thread_;
};

}  // namespace

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  const std::vector<std::string> args(argv + 1, argv + argc);
  stepsim::output::OutputGuard guard;
  int code = 0;
  {
    const SignalWatcher watcher(guard);
    stepsim::cli::Environment environment;
    environment.err_is_terminal = isatty(STDERR_FILENO) == 1;
    environment.output_guard = &guard;
    code = stepsim::cli::run(args, std::cout, std::cerr, environment);
    std::cout.flush();
  }
  return code;
}
