#!/usr/bin/python3
"""The Chrome trace opened in two real trace viewers (ctest label `browser`).

Runs scenarios with --trace and reads each trace with the trace engine of Chrome DevTools'
Performance panel (@paulirish/trace_engine, published from the Chromium DevTools source, run by
node: tests/browser/devtools_trace.mjs): every rank is a process there, every stream with
operations a thread of it with the file's name and number of operations, and no operation is
nested under another (each stream runs one operation at a time, so every slice must be a root
of its thread's tree; a slice that ended a rounding error after the next began would be nested).

It also opens each trace in speedscope (a trace viewer that imports Chrome's
trace event format; tests/browser/viewer pins its version, scripts/setup.sh installs it with npm)
inside headless Chromium, and reads back the viewer's own list of tracks: every (process,
thread) that has operations in the file must be one of the viewer's tracks, named after the
rank's process and the stream's thread, with time on it, every rank must have its compute
track, and the viewer must have drawn them (its flame chart canvas). The totals the viewer shows per track are not
compared: speedscope moves each process's times to start at zero before it adds durations, in
doubles, so spans that follow each other exactly may nest by a rounding error in its arithmetic
(the writer's own guarantee, for exact arithmetic and for Perfetto's nanoseconds, is tested in
tests/output/trace_writer_test.cpp). Exits 77 (ctest's skip code here) when Chromium, node or
the viewers are not installed.

  tests/browser/check_trace_viewer.py --stepsim build/stepsim --source . --out build/tests/browser
"""
import argparse
import base64
import collections
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from check_reports import SKIP, chromium_binary, run
import perfetto_viewers

VIEWER = "tests/browser/viewer/node_modules/speedscope/dist/release/index.html"
DEVTOOLS = "tests/browser/viewer/node_modules/@paulirish/trace_engine/package.json"
# (scenario, extra options): pipeline parallelism with tensor and data parallelism (streams
# compute, tp, pp, pp-recv, dp), and the quickstart (16 ranks, 2 nodes).
SCENARIOS = [
    ("tests/inputs/good/pipeline.yaml", []),
    ("examples/quickstart.yaml", []),
]
UNITS = {"ns": 1e-3, "µs": 1.0, "us": 1.0, "ms": 1e3, "s": 1e6, "min": 6e7}


def file_threads(trace_path):
    """{(pid, tid): (thread name, number of complete events)} of the file."""
    with open(trace_path, encoding="utf-8") as f:
        events = json.load(f)["traceEvents"]
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    counts = collections.Counter((e["pid"], e["tid"]) for e in events if e.get("ph") == "X")
    return {key: (names.get(key), n) for key, n in counts.items()}


def node_major():
    """The major version of the machine's Node.js (0 if it has none)."""
    node = shutil.which("node")
    if node is None:
        return 0
    version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout
    m = re.match(r"v(\d+)", version.strip())
    return int(m.group(1)) if m else 0


def check_devtools(source, trace_path, name):
    """What DevTools' trace engine makes of the file, against the file; the failures."""
    if node_major() < 20:
        # The engine calls Array.prototype.toSorted (Node.js 20); Debian 12's nodejs is 18.
        print(f"{name}: DevTools' trace engine skipped: it needs Node.js 20 or later, this "
              f"machine has {node_major() or 'none'}")
        return []
    result = subprocess.run(["node", os.path.join(source, "tests/browser/devtools_trace.mjs"),
                             trace_path], capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        return [f"{name}: DevTools' trace engine failed (exit {result.returncode}):\n"
                f"{result.stderr[-2000:]}"]
    seen = json.loads(result.stdout)
    expected = file_threads(trace_path)
    failures = []
    for (pid, tid), (thread, count) in sorted(expected.items()):
        got = seen.get(str(pid), {}).get(str(tid))
        if got is None:
            failures.append(f"{name}: DevTools has no thread {tid} ('{thread}') in process {pid}")
        elif got["name"] != thread or got["slices"] != count or got["roots"] != count:
            failures.append(f"{name}: DevTools shows process {pid} thread {tid} as {got}, the "
                            f"file has '{thread}' with {count} operations, none inside another")
    pids = {pid for pid, _ in expected}
    if len(seen) != len(pids):
        failures.append(f"{name}: DevTools shows {len(seen)} processes, the file has {len(pids)}")
    slices = sum(t["slices"] for threads in seen.values() for t in threads.values())
    nested = slices - sum(t["roots"] for threads in seen.values() for t in threads.values())
    print(f"{name}: DevTools' trace engine: {len(seen)} processes, "
          f"{sum(len(t) for t in seen.values())} threads, {slices} slices, {nested} nested")
    return failures


def file_processes(trace_path):
    """{pid: process name} of the file."""
    with open(trace_path, encoding="utf-8") as f:
        events = json.load(f)["traceEvents"]
    return {e["pid"]: e["args"]["name"] for e in events
            if e.get("ph") == "M" and e.get("name") == "process_name"}


def errors_in(console):
    return [text for kind, text in console if kind in ("exception", "error")]


def check_perfetto(source, chromium, trace_path, name):
    """Perfetto's UI against the file: a track group per rank, a slice track per stream with
    nothing nested, and its trace processor's slices per thread; the failures."""
    seen, console = perfetto_viewers.perfetto(source, trace_path, chromium)
    if "error" in seen:
        return [f"{name}: Perfetto: {seen['error']} (status {seen.get('status')})"]
    failures = [f"{name}: Perfetto's page: {e}" for e in errors_in(console)]
    if seen["traceErrors"]:
        failures.append(f"{name}: Perfetto's trace processor reports {seen['traceErrors']} "
                        f"import errors")
    processes = file_processes(trace_path)
    expected = file_threads(trace_path)
    groups = set(seen["groups"].values())
    for pid, process in sorted(processes.items()):
        if f"{process} {pid}" not in groups:
            failures.append(f"{name}: Perfetto has no track group '{process} {pid}'")
    tracks = {(t["group"], t["name"]): t for t in seen["tracks"] if t["kind"] == "ChromeSliceTrack"}
    for (pid, tid), (thread, _) in sorted(expected.items()):
        track = tracks.get((f"{processes[pid]} {pid}", f"{thread} {tid}"))
        if track is None:
            failures.append(f"{name}: Perfetto has no track '{thread} {tid}' in "
                            f"'{processes[pid]} {pid}'")
        elif track["maxDepth"] != 0:
            failures.append(f"{name}: Perfetto nests slices of '{thread} {tid}' in "
                            f"'{processes[pid]} {pid}' (depth {track['maxDepth']})")
    rows = (seen["query"] or {}).get("rows") or []
    held = {(r["pid"], r["tid"]): r for r in rows}
    for (pid, tid), (thread, count) in sorted(expected.items()):
        row = held.get((pid, tid))
        if row is None or row["thread"] != thread or row["slices"] != count or row["roots"] != count:
            failures.append(f"{name}: Perfetto's trace processor holds {row} for process {pid} "
                            f"thread {tid}, the file '{thread}' with {count} operations, none "
                            f"inside another")
    if len(held) != len(expected):
        failures.append(f"{name}: Perfetto's trace processor has {len(held)} threads with slices, "
                        f"the file {len(expected)}")
    if seen["drawn"] < len(processes):
        failures.append(f"{name}: Perfetto drew {seen['drawn']} track elements for "
                        f"{len(processes)} ranks")
    print(f"{name}: Perfetto UI: {len(groups)} track groups, {len(tracks)} slice tracks, "
          f"{sum(r['slices'] for r in rows)} slices, "
          f"{sum(r['slices'] - r['roots'] for r in rows)} nested, {seen['drawn']} drawn")
    return failures


def check_catapult(source, chromium, trace_path, name):
    """The model of chrome://tracing's trace viewer against the file; the failures."""
    seen, console = perfetto_viewers.catapult(source, trace_path, chromium)
    failures = [f"{name}: catapult's page: {e}" for e in errors_in(console)]
    failures += [f"{name}: catapult import warning: {w}" for w in seen["warnings"]]
    processes = file_processes(trace_path)
    got = {(p["pid"], t["tid"]): t for p in seen["processes"] for t in p["threads"]}
    names = {p["pid"]: p["name"] for p in seen["processes"]}
    for pid, process in sorted(processes.items()):
        if names.get(pid) != process:
            failures.append(f"{name}: chrome://tracing's viewer names process {pid} "
                            f"'{names.get(pid)}', the file '{process}'")
    expected = file_threads(trace_path)
    for (pid, tid), (thread, count) in sorted(expected.items()):
        t = got.get((pid, tid))
        if t is None or t["name"] != thread or t["slices"] != count or t["roots"] != count:
            failures.append(f"{name}: chrome://tracing's viewer shows {t} for process {pid} "
                            f"thread {tid}, the file '{thread}' with {count} operations, none "
                            f"inside another")
    with_slices = sum(1 for t in got.values() if t["slices"])
    if with_slices != len(expected):
        failures.append(f"{name}: chrome://tracing's viewer has {with_slices} threads with "
                        f"slices, the file {len(expected)}")
    print(f"{name}: chrome://tracing's viewer (catapult): {len(seen['processes'])} processes, "
          f"{sum(t['slices'] for t in got.values())} slices, "
          f"{sum(t['slices'] - t['roots'] for t in got.values())} nested")
    return failures


def expected_tracks(trace_path):
    """{'PROCESS (pid P), THREAD (tid T)': total microseconds} of the file's complete events."""
    with open(trace_path, encoding="utf-8") as f:
        events = json.load(f)["traceEvents"]
    processes, threads = {}, {}
    totals = collections.defaultdict(float)
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "process_name":
            processes[e["pid"]] = e["args"]["name"]
        elif e.get("ph") == "M" and e.get("name") == "thread_name":
            threads[(e["pid"], e["tid"])] = e["args"]["name"]
        elif e.get("ph") == "X":
            totals[(e["pid"], e["tid"])] += e["dur"]
    return {f"{processes[p]} (pid {p}), {threads[(p, t)]} (tid {t})": us
            for (p, t), us in totals.items()}


def viewer_tracks(chromium, viewer, trace_path, out):
    """The viewer's track list: {name: (shown total, microseconds)}, and its track count."""
    with open(trace_path, "rb") as f:
        data = base64.b64encode(f.read()).decode()
    # What speedscope's own command line does: a script that hands it the file, named in the URL.
    loader = os.path.join(out, os.path.basename(trace_path) + ".load.js")
    with open(loader, "w", encoding="utf-8") as f:
        f.write(f"speedscope.loadFileFromBase64({json.dumps(os.path.basename(trace_path))}, "
                f"{json.dumps(data)})")
    url = "file://" + os.path.abspath(viewer) + "#localProfilePath=" + os.path.abspath(loader)
    with tempfile.TemporaryDirectory() as profile:
        result = subprocess.run(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={profile}", "--virtual-time-budget=20000", "--dump-dom", url],
            capture_output=True, text=True, timeout=600)
    dom = result.stdout
    rows = re.findall(r'<tr title="([^"]*)"[^>]*><td[^>]*>\d+</td><td[^>]*><span>[^<]*</span>'
                      r'</td><td[^>]*>([^<]*)</td></tr>', dom)
    count = re.search(r"\(1/(\d+)\)", dom)
    tracks = {}
    for title, shown in rows:
        m = re.fullmatch(r"([\d.]+)\s*(ns|µs|us|ms|s|min)", html.unescape(shown).strip())
        tracks[html.unescape(title)] = (shown, float(m.group(1)) * UNITS[m.group(2)] if m else None)
    return tracks, int(count.group(1)) if count else 0, dom


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stepsim", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    chromium = chromium_binary()
    viewer = os.path.join(args.source, VIEWER)
    if (chromium is None or shutil.which("node") is None or not os.path.exists(viewer)
            or not os.path.exists(os.path.join(args.source, DEVTOOLS))
            or not os.path.exists(os.path.join(args.source, perfetto_viewers.PACKAGE))):
        print("chromium, node or the trace viewers are not installed (scripts/setup.sh installs "
              "them): skipped")
        return SKIP
    os.makedirs(args.out, exist_ok=True)
    failures = []
    for scenario, options in SCENARIOS:
        name = os.path.splitext(os.path.basename(scenario))[0]
        trace = os.path.join(args.out, name + ".trace.json")
        run([args.stepsim, "-q", "run", os.path.join(args.source, scenario), "--trace", trace]
            + options)
        failures += check_devtools(args.source, trace, name)
        failures += check_perfetto(args.source, chromium, trace, name)
        failures += check_catapult(args.source, chromium, trace, name)
        expected = expected_tracks(trace)
        shown, count, dom = viewer_tracks(chromium, viewer, trace, args.out)
        if not shown:
            failures.append(f"{name}: the viewer listed no track:\n{dom[-2000:]}")
            continue
        if count != len(expected):
            failures.append(f"{name}: the viewer has {count} tracks, the file {len(expected)}")
        for track in sorted(expected):
            if track not in shown:
                failures.append(f"{name}: no track '{track}' in the viewer")
            elif shown[track][1] is None or shown[track][1] <= 0:
                failures.append(f"{name}: '{track}' shows no time in the viewer")
        if "<canvas" not in dom:
            failures.append(f"{name}: the viewer drew no flame chart")
        ranks = {re.match(r"rank (\d+) ", t).group(1) for t in shown if t.startswith("rank ")}
        streams = collections.Counter(re.search(r"\(pid \d+\), (.+) \(tid \d+\)$", t).group(1)
                                      for t in shown)
        if "compute" not in streams or streams["compute"] != len(ranks):
            failures.append(f"{name}: {streams.get('compute', 0)} compute tracks for "
                            f"{len(ranks)} ranks")
        print(f"{name}: speedscope: {os.path.getsize(trace)} bytes, {count} tracks, "
              f"{len(ranks)} ranks; tracks per stream: "
              + ", ".join(f"{s} {n}" for s, n in sorted(streams.items())))
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
