// The native part of the Python module `stepsim` (sim/python/stepsim/__init__.py is the part
// people call; docs/python.md): each function calls one function of the application layer
// (sim/app) and returns its result as Python objects (dicts, lists, numbers, strings) built
// directly from the result, with the keys of the command line's JSON (units in the key names).
// The GIL is released while the simulator runs, so that threads can run simulations side by side.
// Bad input raises _stepsim.InputError (a ValueError) with the message the command line prints.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/app/collective_sweep.hpp"
#include "sim/app/collective_writer.hpp"
#include "sim/app/comparison.hpp"
#include "sim/app/comparison_writer.hpp"
#include "sim/app/layout_search_run.hpp"
#include "sim/app/serving_run.hpp"
#include "sim/app/step_run.hpp"
#include "sim/app/topology_description.hpp"
#include "sim/app/topology_writer.hpp"
#include "sim/common/input_error.hpp"
#include "sim/output/atomic_output.hpp"
#include "sim/run/html_report.hpp"
#include "sim/search/search_output.hpp"

namespace py = pybind11;

namespace stepsim::python {
namespace {

// A JSON tree (a result's writer output, in memory) as Python objects, keys in order.
template <class Json>
py::object to_python(const Json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::object: {
      py::dict d;
      for (auto it = j.begin(); it != j.end(); ++it)
        d[py::str(it.key())] = to_python(it.value());
      return d;
    }
    case nlohmann::json::value_t::array: {
      py::list l;
      for (const auto& item : j)
        l.append(to_python(item));
      return l;
    }
    case nlohmann::json::value_t::string:
      return py::str(j.template get<std::string>());
    case nlohmann::json::value_t::boolean:
      return py::bool_(j.template get<bool>());
    case nlohmann::json::value_t::number_integer:
      return py::int_(j.template get<std::int64_t>());
    case nlohmann::json::value_t::number_unsigned:
      return py::int_(j.template get<std::uint64_t>());
    case nlohmann::json::value_t::number_float:
      return py::float_(j.template get<double>());
    default:
      return py::none();
  }
}

// A scenario as __init__.py passes it: a file, or YAML text named `origin`, and the overrides.
struct Source {
  std::string file;
  std::string text;
  std::string origin;
  std::vector<std::string> overrides;

  app::ScenarioSource scenario() const {
    app::ScenarioSource s;
    s.file = file;
    s.text = text;
    s.origin = origin;
    s.overrides = overrides;
    return s;
  }
};

// Writes `write(stream)` to `path` whole (renamed into place when complete), when path is set.
template <class Write>
void write_file(const std::string& path, Write write) {
  if (path.empty()) return;
  output::AtomicFile file(path);
  write(file.stream());
  file.commit();
}

py::object run(const Source& source, const std::string& max_memory, const std::string& html,
               const std::string& html_ranks, const std::string& trace,
               const std::string& trace_ranks) {
  app::StepRequest request;
  request.scenario = source.scenario();
  request.max_memory = max_memory;
  if (!trace.empty()) request.trace = trace;
  request.trace_ranks = trace_ranks;
  request.view = !html.empty();
  request.view_ranks = html_ranks;
  std::optional<app::StepRun> result;
  {
    py::gil_scoped_release release;
    result.emplace(app::run_step(request));
    write_file(html,
               [&](std::ostream& out) { write_step_html(out, result->report, *result->view); });
  }
  return to_python(to_json(result->report));
}

py::object serve(const Source& source, const std::string& tpot, const std::string& html,
                 const std::string& html_ranks, const std::string& trace,
                 const std::string& trace_ranks) {
  app::ServeRequest request;
  request.scenario = source.scenario();
  request.tpot = tpot;
  if (!trace.empty()) request.trace = trace;
  request.trace_ranks = trace_ranks;
  request.views = !html.empty();
  request.view_ranks = html_ranks;
  std::optional<app::ServeRun> result;
  {
    py::gil_scoped_release release;
    result.emplace(app::serve(request));
    write_file(html,
               [&](std::ostream& out) { write_serve_html(out, result->report, result->views); });
  }
  return to_python(to_json(result->report));
}

py::object compare(const std::vector<Source>& sources, const std::vector<std::string>& topologies,
                   const std::vector<std::string>& variants, bool search,
                   const std::vector<std::string>& spaces, unsigned jobs,
                   const std::string& max_memory) {
  app::CompareRequest request;
  for (const Source& s : sources)
    request.scenarios.push_back(s.scenario());
  request.topologies = topologies;
  request.variants = variants;
  request.search = search;
  request.spaces = spaces;
  request.jobs = jobs;
  request.max_memory = max_memory;
  std::optional<app::Comparison> result;
  {
    py::gil_scoped_release release;
    result.emplace(app::compare(request));
  }
  return to_python(app::comparison_json(*result));
}

py::object collective(app::CollectiveRequest request, const std::string& html,
                      const std::string& published) {
  std::optional<app::CollectiveSweep> sweep;
  {
    py::gil_scoped_release release;
    sweep.emplace(app::sweep_collective(request));
    write_file(html, [&](std::ostream& out) {
      app::write_collective_page(out, *sweep,
                                 app::published_points(*sweep, published)
                                     .value_or(std::vector<stepsim::PublishedBusbw>{}));
    });
  }
  return to_python(app::collective_json(*sweep));
}

py::object topology(const std::string& spec, bool reach) {
  std::optional<app::TopologyDescription> description;
  {
    py::gil_scoped_release release;
    description.emplace(app::describe_topology(spec, reach));
  }
  return to_python(app::topology_json(*description));
}

py::object search(const Source& source, const std::vector<std::string>& spaces,
                  double memory_margin, unsigned jobs,
                  const std::vector<std::string>& memory_overrides, const std::string& max_memory,
                  const std::string& write_best) {
  app::SearchRequest request;
  request.scenario = source.scenario();
  request.spaces = spaces;
  request.memory_margin = memory_margin;
  request.jobs = jobs;
  request.memory_overrides = memory_overrides;
  request.max_memory = max_memory;
  std::optional<app::SearchRun> run;
  {
    py::gil_scoped_release release;
    run.emplace(app::search(request));
    write_file(write_best, [&](std::ostream& out) {
      search::write_scenario_yaml(out, run->scenario, run->outcome.ranked.front());
    });
  }
  return to_python(search::to_json(run->outcome));
}

}  // namespace
}  // namespace stepsim::python

PYBIND11_MODULE(_stepsim, m) {
  using namespace stepsim::python;
  using stepsim::app::CollectiveRequest;
  m.doc() = "stepsim's application layer, in-process (use the package `stepsim`, docs/python.md)";
  py::register_exception<stepsim::InputError>(m, "InputError", PyExc_ValueError);
  py::class_<Source>(m, "Source")
      .def(py::init<std::string, std::string, std::string, std::vector<std::string>>(),
           py::arg("file"), py::arg("text"), py::arg("origin"), py::arg("overrides"));
  py::class_<CollectiveRequest>(m, "CollectiveRequest")
      .def(py::init<>())
      .def_readwrite("topology", &CollectiveRequest::topology)
      .def_readwrite("op", &CollectiveRequest::op)
      .def_readwrite("ranks", &CollectiveRequest::ranks)
      .def_readwrite("sizes", &CollectiveRequest::sizes)
      .def_readwrite("sizes_given", &CollectiveRequest::sizes_given)
      .def(
          "set_network",
          [](CollectiveRequest& r, std::string key, std::string value) {
            r.network.set(std::move(key), std::move(value));
          },
          py::arg("key"), py::arg("value"))
      .def_readwrite("root", &CollectiveRequest::root)
      .def_readwrite("matrix", &CollectiveRequest::matrix)
      .def_readwrite("skew", &CollectiveRequest::skew)
      .def_readwrite("max_memory", &CollectiveRequest::max_memory);
  m.def("run", &run, py::arg("source"), py::arg("max_memory"), py::arg("html"),
        py::arg("html_ranks"), py::arg("trace"), py::arg("trace_ranks"),
        "app::run_step: the report as a dict.");
  m.def("serve", &serve, py::arg("source"), py::arg("tpot"), py::arg("html"), py::arg("html_ranks"),
        py::arg("trace"), py::arg("trace_ranks"), "app::serve: the report as a dict.");
  m.def("compare", &compare, py::arg("sources"), py::arg("topologies"), py::arg("variants"),
        py::arg("search"), py::arg("spaces"), py::arg("jobs"), py::arg("max_memory"),
        "app::compare: a list of {variant, report}.");
  m.def("collective", &collective, py::arg("request"), py::arg("html"), py::arg("published"),
        "app::sweep_collective: the setup and its rows as a dict.");
  m.def("topology", &topology, py::arg("spec"), py::arg("reach"),
        "app::describe_topology: the description as a dict.");
  m.def("search", &search, py::arg("source"), py::arg("spaces"), py::arg("memory_margin"),
        py::arg("jobs"), py::arg("memory_overrides"), py::arg("max_memory"), py::arg("write_best"),
        "app::search: the search as a dict.");
}
