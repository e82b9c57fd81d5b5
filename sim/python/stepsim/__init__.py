"""stepsim from Python: simulate a training step, a serving scenario, a collective or a topology
in-process.

    import stepsim
    report = stepsim.run("examples/quickstart.yaml", overrides={"parallelism.tp": 4})
    print(report["step_time_s"], report["mfu"])

Each function calls one function of stepsim's application layer (sim/app) and returns its result
as plain Python objects with the keys of the command line's JSON, units in the key names
(docs/report-schema.md for run and compare). A scenario is a file name, YAML text or a dict; bad
input raises StepsimError (a ValueError) with the message the command line prints, and the file,
key and value it names as attributes. The simulator releases the GIL while it runs, so threads run
simulations side by side. docs/python.md has the whole interface.
"""
import json
import os
import re

from . import _stepsim

__all__ = ["run", "serve", "compare", "collective", "topology", "search", "StepsimError"]


class StepsimError(ValueError):
    """Bad input: the command line's message, and what it names.

    file: the file (or "command line (-o KEY=VALUE)") the bad value is in, or None;
    line, column: where in the file (None when not known);
    key: the key path of the bad value ("parallelism.tp"), or None;
    value: the bad value as written, or None.
    """

    # "FILE[:LINE:COLUMN]: KEY: what is wrong[, got 'VALUE']", as the scenario reader words it.
    _WHERE = re.compile(r"^(?P<file>.+?)(?::(?P<line>\d+):(?P<column>\d+))?: "
                        r"(?P<key>[A-Za-z_][\w.\[\]]*): (?P<what>.*)$", re.S)
    _VALUE = re.compile(r"got '(?P<value>.*)'\)?$", re.S)

    def __init__(self, message):
        super().__init__(message)
        self.file = self.line = self.column = self.key = self.value = None
        where = self._WHERE.match(message)
        if where:
            self.file = where["file"]
            self.line = int(where["line"]) if where["line"] else None
            self.column = int(where["column"]) if where["column"] else None
            self.key = where["key"]
            value = self._VALUE.search(where["what"])
            if value:
                self.value = value["value"]


def _call(function, *args):
    """Calls the native `function`, raising StepsimError for bad input."""
    try:
        return function(*args)
    except _stepsim.InputError as e:
        raise StepsimError(str(e)) from None


def _yaml_value(value):
    """An override's value as the command line writes it after KEY=."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value)  # JSON is YAML
    return str(value)


def _overrides(overrides):
    """{"parallelism.tp": 4} or ["parallelism.tp=4"] or "k=v k=v" -> ["parallelism.tp=4"]."""
    if overrides is None:
        return []
    if isinstance(overrides, dict):
        return [f"{key}={_yaml_value(value)}" for key, value in overrides.items()]
    if isinstance(overrides, str):
        return overrides.split()
    return [str(o) for o in overrides]


def _is_text(scenario):
    """Whether a str is a scenario's YAML text rather than a file name."""
    return "\n" in scenario or scenario.lstrip().startswith("{")


def _source(scenario, overrides=None, label=None):
    """The native Source of a file name (str or path), YAML text or a dict."""
    if isinstance(scenario, dict):
        text, origin = json.dumps(scenario), label or "<scenario dict>"  # JSON is YAML
        return _stepsim.Source("", text, origin, _overrides(overrides))
    if isinstance(scenario, str) and _is_text(scenario):
        return _stepsim.Source("", scenario, label or "<scenario text>", _overrides(overrides))
    return _stepsim.Source(os.fspath(scenario), "", "", _overrides(overrides))


def run(scenario, overrides=None, *, max_memory="", html=None, html_ranks="auto", trace=None,
        trace_ranks="auto"):
    """Simulates one training step, as `stepsim run SCENARIO --report`.

    scenario: a scenario file (str or path-like), its YAML text, or a dict with the same keys
        (relative file names in text or a dict resolve against the current directory).
    overrides: {"key.path": value} or ["key.path=value"], applied in order (as -o).
    max_memory: refuse a step estimated to need more ("8GiB"; default: the machine's memory).
    html, trace: also write the --html page or the --trace file there.
    Returns the report (docs/report-schema.md) as a dict.
    """
    return _call(_stepsim.run, _source(scenario, overrides), max_memory, os.fspath(html or ""),
                 html_ranks, os.fspath(trace or ""), trace_ranks)


def serve(scenario, overrides=None, *, tpot=None, html=None, html_ranks="auto", trace=None,
          trace_ranks="auto"):
    """Simulates a serving scenario's prefill pass and decode step, as `stepsim serve --report`.

    scenario, overrides: as for run(), a scenario with a `serving:` section (docs/serving.md).
    tpot: find the largest decode batch whose time per output token meets this ("50ms").
    Returns the report as a dict (ttft_s, tpot_s, tokens per second per accelerator, memory).
    """
    return _call(_stepsim.serve, _source(scenario, overrides), tpot or "", os.fspath(html or ""),
                 html_ranks, os.fspath(trace or ""), trace_ranks)


def compare(scenarios, overrides=None, *, topologies=None, variants=None, search=False,
            space=None, jobs=None, max_memory=""):
    """Several steps side by side, as `stepsim compare ... --json`: a list of {"variant", "report"}.

    scenarios: one scenario (file, YAML text or dict) or a list of them, all training or all
        serving scenarios; a dict is labelled by its "name" (or "scenario N").
    topologies: run the one scenario on each of these topology specs.
    variants: run the one scenario with each of these override sets (dicts, lists or
        "k=v k=v" strings).
    search, space, jobs: compare each variant's fastest layout (as search()).
    Each report is as run() (or serve()) returns it, a step's without "resolved_scenario".
    """
    if isinstance(scenarios, (str, os.PathLike, dict)):
        scenarios = [scenarios]
    sources = []
    for i, s in enumerate(scenarios):
        label = s.get("name", f"scenario {i}") if isinstance(s, dict) else None
        sources.append(_source(s, overrides, label))
    labels = [v if isinstance(v, str) else " ".join(_overrides(v)) for v in variants or []]
    return _call(_stepsim.compare, sources, list(topologies or []), labels, bool(search),
                 _space(space), jobs or 0, max_memory)


# collective()'s options that are keys of a scenario's network section, by the name they take.
_NETWORK_OPTIONS = {"algo": "algorithm", "links": "calibration", "proto": "protocol",
                    "ecmp": "ecmp", "pxn": "pxn", "nccl": "nccl", "channels": "channels",
                    "chunk_size": "chunk_size", "step_latency": "step_latency",
                    "op_latency": "op_latency"}


def collective(topology, op="allreduce", *, ranks="all", sizes=None, html=None,
               published="validation/cases.yaml", root=0, matrix=None, skew=None,
               max_memory="", network=None, **options):
    """Times one collective over sizes, as `stepsim collective --json`: a dict with "rows".

    sizes: "MIN:MAX" doubling, or one size (default 8B:1GiB; alltoallv with a matrix: its own).
    network: keys of a scenario's network section, {"calibration": "line-rate", ...}
        (docs/collectives.md); the command line's names are the same options: algo (algorithm),
        links (calibration), proto (protocol), ecmp, pxn ("on"/"off" or a bool), nccl, channels,
        chunk_size, step_latency, op_latency.
    """
    request = _stepsim.CollectiveRequest()
    request.topology, request.op, request.ranks = topology, op, str(ranks)
    request.root, request.matrix, request.max_memory = int(root), os.fspath(matrix or ""), max_memory
    if skew is not None:
        request.skew = float(skew)
    if sizes is not None:
        request.sizes, request.sizes_given = str(sizes), True
    settings = dict(network or {})
    for name, value in options.items():
        if name not in _NETWORK_OPTIONS:
            raise TypeError(f"collective() got an unexpected option '{name}'")
        if name == "pxn" and value in ("on", "off"):
            value = value == "on"
        settings[_NETWORK_OPTIONS[name]] = value
    for key, value in settings.items():
        request.set_network(key, _yaml_value(value))
    return _call(_stepsim.collective, request, os.fspath(html or ""), os.fspath(published))


def topology(spec, *, reach=True):
    """Describes a topology, as `stepsim topo SPEC --json`."""
    return _call(_stepsim.topology, os.fspath(spec), bool(reach))


def _space(space):
    """{"tp": [1, 2], "pp": 4} or ["tp=1,2"] or "tp=1,2 pp=4" -> ["tp=1,2", "pp=4"]."""
    if space is None:
        return []
    if isinstance(space, dict):
        items = []
        for key, values in space.items():
            if not isinstance(values, (list, tuple)):
                values = [values]
            items.append(f"{key}=" + ",".join(_yaml_value(v) for v in values))
        return items
    if isinstance(space, str):
        return space.split()
    return [os.fspath(item) for item in space]


def search(scenario, overrides=None, *, space=None, jobs=None, memory_margin=None,
           memory_with=None, max_memory="", write_best=None):
    """Searches the fastest layout, as `stepsim search SCENARIO --json` (docs/search.md).

    scenario: a scenario file, YAML text or a dict (as for run()); its own layout must be valid.
    space: the values to try, {"tp": [2, 4, 8], "pp": [1, 2]} or ["tp=2,4,8", "pp=1,2"] or a
        YAML file's path in a list (["space.yaml"]); the defaults cover what is left out.
    jobs: simulations at once (default: the machine's cores); the result does not depend on it.
    memory_with: overrides for the memory rule alone (as --memory-with).
    write_best: also write the fastest layout there as a scenario file.
    Returns the search as a dict: the counts per pruning rule and every simulated layout,
    fastest first.
    """
    return _call(_stepsim.search, _source(scenario, overrides), _space(space),
                 float(memory_margin or 0.0), int(jobs or 0), _overrides(memory_with),
                 max_memory, os.fspath(write_best or ""))
