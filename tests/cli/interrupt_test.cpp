// The real program interrupted: SIGINT or SIGTERM at random moments of `stepsim run` with a report,
// a trace and an HTML page never leaves a partial, empty or temporary file, and a report from an
// earlier run survives unless the run finished. Runs the built binary (STEPSIM_BINARY_DIR/stepsim).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Starts `stepsim run quickstart --report R --trace T --html H -q` in `dir`, sends `signal` after
// `delay`,
// and returns the wait status.
int run_and_signal(const fs::path& dir, int signal, std::chrono::microseconds delay) {
  const std::string binary = std::string(STEPSIM_BINARY_DIR) + "/stepsim";
  const std::string scenario = std::string(STEPSIM_SOURCE_DIR) + "/examples/quickstart.yaml";
  const std::string report = (dir / "report.json").string();
  const std::string trace = (dir / "trace.json").string();
  const std::string html = (dir / "page.html").string();
  const pid_t pid = fork();
  if (pid == 0) {
    // Quiet: the child's output is not the test's.
    std::freopen("/dev/null", "w", stdout);
    std::freopen("/dev/null", "w", stderr);
    execl(binary.c_str(), binary.c_str(), "run", scenario.c_str(), "--report", report.c_str(),
          "--trace", trace.c_str(), "--html", html.c_str(), "-q", static_cast<char*>(nullptr));
    _exit(127);
  }
  std::this_thread::sleep_for(delay);
  kill(pid, signal);
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

TEST(Interrupt, RandomSignalsNeverLeaveAPartialFile) {
  // Its own directory per test process: builds that run their tests at once on one machine must
  // not write each other's files.
  const fs::path dir =
      fs::temp_directory_path() / ("stepsim-interrupt-test-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string earlier_report = "{\"earlier\": true}\n";
  const std::string earlier_trace = "[]\n";
  const std::string earlier_html = "<!doctype html><p>earlier</p>\n";
  // A complete page ends with its closing tag (write_step_html writes it last).
  const auto complete_html = [](const std::string& page) {
    return page.size() > 8 && page.ends_with("</html>\n");
  };
  std::mt19937 random(20261201);  // fixed seed: the same moments on every run of the test
  // The quickstart takes about 0.3 s in a release build (longer under sanitizers): moments up to
  // 0.4 s interrupt it at every stage, from start-up to writing, and some let it finish.
  std::uniform_int_distribution<int> moment_us(0, 400'000);
  int interrupted = 0;
  int finished = 0;
  for (int i = 0; i < 50; ++i) {
    std::ofstream(dir / "report.json") << earlier_report;
    std::ofstream(dir / "trace.json") << earlier_trace;
    std::ofstream(dir / "page.html") << earlier_html;
    const int signal = i % 5 == 4 ? SIGTERM : SIGINT;
    const int status = run_and_signal(dir, signal, std::chrono::microseconds(moment_us(random)));
    const std::string report = read(dir / "report.json");
    const std::string trace = read(dir / "trace.json");
    const std::string html = read(dir / "page.html");
    if (WIFSIGNALED(status)) {
      // A signal before main() set up its watcher ends the process the default way (the shell
      // shows 128 + signal all the same); nothing was written yet.
      ++interrupted;
      EXPECT_EQ(WTERMSIG(status), signal) << "run " << i;
      EXPECT_EQ(report, earlier_report) << "run " << i;
      EXPECT_EQ(trace, earlier_trace) << "run " << i;
      EXPECT_EQ(html, earlier_html) << "run " << i;
    } else if (const int code = WEXITSTATUS(status); code == 0) {
      // It finished before the signal: both files are complete and new.
      ++finished;
      EXPECT_TRUE(nlohmann::json::accept(report)) << "run " << i;
      EXPECT_TRUE(nlohmann::json::accept(trace)) << "run " << i;
      EXPECT_NE(report, earlier_report) << "run " << i;
      EXPECT_TRUE(complete_html(html)) << "run " << i;
    } else {
      ++interrupted;
      EXPECT_EQ(code, signal == SIGINT ? 130 : 143) << "run " << i;
      // Each file is either the earlier one or a complete new one (the report is renamed into
      // place after the trace: an interrupt between the two renames keeps the earlier report).
      EXPECT_TRUE(report == earlier_report ||
                  (nlohmann::json::accept(report) && report.find("step_time") != std::string::npos))
          << "run " << i << ": report is '" << report.substr(0, 80) << "'";
      EXPECT_TRUE(trace == earlier_trace || nlohmann::json::accept(trace)) << "run " << i;
      EXPECT_TRUE(html == earlier_html || complete_html(html))
          << "run " << i << ": page ends '" << html.substr(html.size() > 40 ? html.size() - 40 : 0)
          << "'";
    }
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir))
      names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    EXPECT_EQ(names, (std::vector<std::string>{"page.html", "report.json", "trace.json"}))
        << "run " << i << ": a temporary file was left behind";
  }
  EXPECT_GT(interrupted, 0);
  fs::remove_all(dir);
  std::cout << interrupted << " runs interrupted, " << finished << " finished\n";
}

}  // namespace
