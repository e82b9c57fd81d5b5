// The native part of the Python module `stepsim` (sim/python/stepsim/__init__.py is the part
// people call; docs/python.md). It runs the simulator in-process and releases the GIL while it
// does, so that threads can run simulations side by side:
//  - run(): a scenario file, or scenario text (a dict as JSON, which is YAML), with overrides:
//    the --report JSON as text, and the --html page and --trace when asked, as `stepsim run`.
//  - cli(): any `stepsim` command line, in-process: (exit code, stdout, stderr).
// Bad input raises StepsimError (a ValueError) with the command line's message.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "sim/cli/cli.hpp"
#include "sim/common/config.hpp"
#include "sim/common/input_error.hpp"
#include "sim/output/atomic_output.hpp"
#include "sim/run/html_report.hpp"
#include "sim/run/resource_estimate.hpp"
#include "sim/run/simulate.hpp"
#include "sim/scenario/scenario.hpp"

namespace py = pybind11;

namespace stepsim::python {
namespace {

struct RunArguments {
  std::string source;  // a path, or the scenario's text
  bool is_text = false;
  std::vector<std::string> overrides;
  std::string html;
  std::string html_ranks = "auto";
  std::string trace;
  std::string trace_ranks = "auto";
};

// As `stepsim run SOURCE -o ... [--html F] [--trace F]`; returns the report as JSON text.
std::string run_step(const RunArguments& a) {
  const Scenario scenario =
      a.is_text ? load_scenario(config::Document::parse(a.source, "<scenario dict>",
                                                        std::filesystem::current_path()),
                                "scenario", a.overrides)
                : load_scenario(a.source, a.overrides);
  check_resources(estimate_resources(scenario.workload), scenario.workload, machine_memory(),
                  "the machine's memory");
  std::optional<output::AtomicFile> html_file;
  if (!a.html.empty()) html_file.emplace(a.html);
  SimulateOptions options;
  StepView view;
  if (html_file) {
    options.view = &view;
    options.view_ranks = a.html_ranks;
  }
  if (!a.trace.empty()) options.trace = a.trace;
  options.trace_ranks = a.trace_ranks;
  const StepReport report = simulate_step(scenario, options);
  if (html_file) {
    write_step_html(html_file->stream(), report, view);
    html_file->commit();
  }
  return to_json(report).dump();
}

std::tuple<int, std::string, std::string> run_cli(const std::vector<std::string>& args) {
  std::ostringstream out;
  std::ostringstream err;
  const int code = cli::run(args, out, err);
  return {code, out.str(), err.str()};
}

}  // namespace
}  // namespace stepsim::python

PYBIND11_MODULE(_stepsim, m) {
  using namespace stepsim::python;
  m.doc() = "stepsim's simulator, in-process (use the package `stepsim`, docs/python.md)";
  py::register_exception<stepsim::InputError>(m, "StepsimError", PyExc_ValueError);
  m.def(
      "run",
      [](std::string source, bool is_text, std::vector<std::string> overrides, std::string html,
         std::string html_ranks, std::string trace, std::string trace_ranks) {
        const RunArguments a{
            std::move(source),     is_text,          std::move(overrides),  std::move(html),
            std::move(html_ranks), std::move(trace), std::move(trace_ranks)};
        py::gil_scoped_release release;
        return run_step(a);
      },
      py::arg("source"), py::arg("is_text"), py::arg("overrides"), py::arg("html") = "",
      py::arg("html_ranks") = "auto", py::arg("trace") = "", py::arg("trace_ranks") = "auto",
      "Simulates one step; returns the --report JSON text.");
  m.def(
      "cli",
      [](const std::vector<std::string>& args) {
        py::gil_scoped_release release;
        return run_cli(args);
      },
      py::arg("args"), "Runs `stepsim ARGS...` in-process: (exit code, stdout, stderr).");
}
