"""stepsim from Python: simulate a training step, a collective or a topology in-process.

    import stepsim
    report = stepsim.run("examples/quickstart.yaml", overrides={"parallelism.tp": 4})
    print(report["step_time_s"], report["mfu"])

Every function returns plain Python objects with the keys of the command line's JSON
(docs/report-schema.md for run and compare). Bad input raises StepsimError (a ValueError) with
the message the command line prints. The simulator releases the GIL while it runs, so threads
run simulations side by side. docs/python.md has the whole interface.
"""
import json
import os
import tempfile

from . import _stepsim
from ._stepsim import StepsimError

__all__ = ["run", "compare", "collective", "topology", "search", "StepsimError"]

_ERROR_PREFIX = "stepsim: error: "


def _yaml_value(value):
    """An override's value as the command line writes it after KEY=."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value)  # JSON is YAML
    return str(value)


def _overrides(overrides):
    """{"parallelism.tp": 4} or ["parallelism.tp=4"] -> ["parallelism.tp=4"]."""
    if overrides is None:
        return []
    if isinstance(overrides, dict):
        return [f"{key}={_yaml_value(value)}" for key, value in overrides.items()]
    if isinstance(overrides, str):
        return overrides.split()
    return [str(o) for o in overrides]


def _source(scenario):
    """(text or path, is_text) for a dict or a path."""
    if isinstance(scenario, dict):
        return json.dumps(scenario), True
    return os.fspath(scenario), False


def _cli(args):
    """Runs `stepsim ARGS...` in-process; raises on a non-zero exit code."""
    code, out, err = _stepsim.cli([str(a) for a in args])
    if code == 0:
        return out
    message = err.strip()
    lines = [line for line in message.splitlines() if line.startswith(_ERROR_PREFIX)]
    if lines:
        message = lines[0][len(_ERROR_PREFIX):]
    if code == 2:
        raise StepsimError(message)
    raise RuntimeError(f"stepsim exited with {code}: {message}")


def run(scenario, overrides=None, *, html=None, html_ranks="auto", trace=None,
        trace_ranks="auto"):
    """Simulates one training step, as `stepsim run SCENARIO --report`.

    scenario: a scenario file (str or path-like) or a dict with the same keys as the YAML file
        (a dict's relative file names resolve against the current directory).
    overrides: {"key.path": value} or ["key.path=value"], applied in order (as -o).
    html, trace: also write the --html page or the --trace file there.
    Returns the report (docs/report-schema.md) as a dict.
    """
    source, is_text = _source(scenario)
    text = _stepsim.run(source, is_text, _overrides(overrides), os.fspath(html or ""),
                        html_ranks, os.fspath(trace or ""), trace_ranks)
    return json.loads(text)


def compare(scenarios, overrides=None, *, topologies=None, variants=None):
    """Several steps, as `stepsim compare ... --json`: a list of {"variant", "report"}.

    scenarios: one scenario (path or dict) or a list of them.
    topologies: run the one scenario on each of these topology specs.
    variants: run the one scenario with each of these override sets (dicts, lists or
        "k=v k=v" strings).
    Each report is as run() returns it, without "resolved_scenario".
    """
    if isinstance(scenarios, (str, os.PathLike, dict)):
        scenarios = [scenarios]
    scenarios = list(scenarios)
    base = _overrides(overrides)
    runs = []  # (label, scenario, overrides)
    if topologies or variants:
        if len(scenarios) != 1:
            raise StepsimError(
                "--topology and --variant compare one scenario; give exactly one file")
        for t in topologies or []:
            runs.append((t, scenarios[0], base + [f"topology={t}"]))
        for v in variants or []:
            label = v if isinstance(v, str) else " ".join(_overrides(v))
            runs.append((label, scenarios[0], base + _overrides(v)))
    else:
        for i, s in enumerate(scenarios):
            label = s.get("name", f"scenario {i}") if isinstance(s, dict) else os.fspath(s)
            runs.append((label, s, base))
    rows = []
    for label, s, o in runs:
        report = run(s, o)
        report.pop("resolved_scenario", None)
        rows.append({"variant": label, "report": report})
    return rows


def collective(topology, op="allreduce", *, ranks="all", algo="auto", sizes="8B:1GiB",
               links="calibrated", ecmp="fabric", html=None, **options):
    """Times one collective over sizes, as `stepsim collective --json`: a dict with "rows".

    Further options take the command line's names with underscores: chunk_size, channels,
    step_latency, op_latency, pxn, root, skew, matrix, max_memory.
    """
    args = ["-q", "collective", "-t", topology, "--op", op, "--ranks", ranks, "--algo", algo,
            "--sizes", sizes, "--links", links, "--ecmp", ecmp, "--json"]
    if html:
        args += ["--html", os.fspath(html)]
    for key, value in options.items():
        args += ["--" + key.replace("_", "-"), _yaml_value(value)]
    return json.loads(_cli(args))


def topology(spec, *, reach=True):
    """Describes a topology, as `stepsim topo SPEC --json`."""
    args = ["-q", "topo", os.fspath(spec), "--json"]
    if not reach:
        args.append("--no-reach")
    return json.loads(_cli(args))


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
    return [str(item) for item in space]


def search(scenario, overrides=None, *, space=None, jobs=None, memory_margin=None, top=None,
           write_best=None):
    """Searches the fastest layout, as `stepsim search SCENARIO --json` (docs/search.md).

    scenario: a scenario file or a dict (as for run()); its own layout must be valid.
    space: the values to try, {"tp": [2, 4, 8], "pp": [1, 2]} or ["tp=2,4,8", "pp=1,2"] or a
        YAML file's path in a list (["space.yaml"]); the defaults cover what is left out.
    jobs: simulations at once (default: the machine's cores); the result does not depend on it.
    write_best: also write the fastest layout there as a scenario file.
    Returns the search's JSON as a dict: the counts per pruning rule and every simulated layout,
    fastest first.
    """
    with tempfile.TemporaryDirectory(prefix="stepsim-search-") as work:
        if isinstance(scenario, dict):
            path = os.path.join(work, "scenario.yaml")
            with open(path, "w") as f:
                json.dump(scenario, f)  # JSON is YAML
        else:
            path = os.fspath(scenario)
        out = os.path.join(work, "search.json")
        args = ["-q", "search", path, "--json", out]
        for o in _overrides(overrides):
            args += ["-o", o]
        for item in _space(space):
            args += ["--space", item]
        if jobs is not None:
            args += ["-j", str(jobs)]
        if memory_margin is not None:
            args += ["--memory-margin", str(memory_margin)]
        if top is not None:
            args += ["--top", str(top)]
        if write_best is not None:
            args += ["--write-best", os.fspath(write_best)]
        _cli(args)
        with open(out) as f:
            return json.load(f)
