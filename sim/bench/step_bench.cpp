// bench_step: one training step of a scenario file, end to end (load, workload, executor, report),
// with its wall time, CPU time and peak resident memory (docs/performance.md, "Training step").
//   build/sim/bench/bench_step examples/gpt3-175b-superpod.yaml [-o key=value ...]
// A whole step takes seconds to minutes, so this is a plain program, not a Google Benchmark loop.
#include <sys/resource.h>

#include <fmt/format.h>
#include <chrono>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "sim/common/input_error.hpp"
#include "sim/run/simulate.hpp"
#include "sim/scenario/scenario.hpp"

namespace {

double cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_step SCENARIO.yaml [-o key=value ...]\n");
    return 2;
  }
  std::vector<std::string> overrides;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) != "-o") {
      std::fprintf(stderr, "bench_step: expected -o key=value, got '%s'\n", argv[i]);
      return 2;
    }
    overrides.emplace_back(argv[i + 1]);
  }
  try {
    const auto wall_start = std::chrono::steady_clock::now();
    const double cpu_start = cpu_seconds();
    const stepsim::Scenario scenario = stepsim::load_scenario(argv[1], overrides);
    const stepsim::StepReport report = stepsim::simulate_step(scenario);
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    const double cpu = cpu_seconds() - cpu_start;
    fmt::print("scenario        {} ({} ranks)\n", report.scenario, report.world_size);
    fmt::print("step time       {:.6f} s (simulated)\n", report.step_time.seconds());
    fmt::print("operations      {}\ntransfers       {}\nevents          {}\n", report.operations,
               report.flows, report.events);
    fmt::print(
        "solves          {} (classes solved {}, {} of them from twin parts; boundary "
        "expansions {})\n",
        report.solves, report.classes_solved, report.twin_classes, report.boundary_expansions);
    fmt::print("wall time       {:.2f} s\ncpu time        {:.2f} s\npeak RSS        {:.0f} MiB\n",
               wall, cpu, peak_rss_mib());
    fmt::print("events/s        {:.2f} M (by CPU time)\n",
               static_cast<double>(report.events) / cpu * 1e-6);
  } catch (const stepsim::InputError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_step failed: %s\n", e.what());
    return 1;
  }
  return 0;
}
