#!/usr/bin/python3
"""The --html reports in a real browser (ctest label `browser`).

Writes the reports of the quickstart, of one rank alone (no traffic: the page says so instead of
drawing empty link charts), a compare of the five topologies of
examples/compare-topologies.sh and (with --gpt3) the GPT-3 175B 1,024-GPU example, opens each in
headless Chromium (Debian's `chromium`), and checks the page the browser built after its script
ran: no console error, every chart (<figure class="chart">) present with at least one drawn mark,
the timeline's zoom script working, and the GPT-3 page under 5 MB. With --trace, it checks the
Chrome trace instead: parsed by the browser, every rank's process and stream tracks are there.
Exits 77 (ctest's skip code here) when Chromium is not installed.

  tests/browser/check_reports.py --stepsim build/stepsim --source . --out build/tests/browser
"""
import argparse
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
CHARTS = {
    "run": ["timeline", "stages", "links", "link-classes", "dimensions", "memory"],
    "compare": ["step-time", "breakdown", "dimensions", "busiest-link", "memory"],
    "collective": ["busbw"],
    # One rank on one GPU: no traffic, so no link or dimension charts, and a sentence instead.
    "single": ["timeline", "stages", "memory"],
}
SINGLE_NOTES = ["No link carried traffic during the step", "No communication"]
# A topology of one GPU on its own switch, for the single-rank page.
ONE_GPU = """name: one-gpu
nodes:
  - {name: gpu0, kind: accelerator}
  - {name: sw, kind: switch}
links:
  - {from: gpu0, to: sw, bandwidth: 450GB/s, latency: 150ns, class: nvlink, duplex: true}
groups:
  - {kind: scale-up, name: box0, members: [gpu0, sw]}
"""
TOPOLOGIES = [
    "dgx-h100-superpod:nodes=4",
    "cluster:nodes=4,nvlink_bandwidth=200GB/s",
    "cluster:nodes=4,nic_speed=200Gbps",
    "cluster:nodes=4,nic_speed=100Gbps",
    "cluster:nodes=4,rail_optimized=false,radix=16,oversubscription=3",
]
MAX_GPT3_BYTES = 5_000_000

# After the page's own script, a probe zooms the first timeline (a wheel event) and writes what
# it sees into the DOM, so --dump-dom shows whether the zoom changed the view box.
PROBE = """<script>
(function(){var p=document.querySelector('svg.tl-plot');var out=document.createElement('div');
out.id='probe';if(p){var before=p.getAttribute('viewBox');var r=p.getBoundingClientRect();
p.dispatchEvent(new WheelEvent('wheel',{deltaY:-100,clientX:r.left+r.width/2,clientY:r.top+5,
bubbles:true,cancelable:true}));out.setAttribute('data-zoomed',String(p.getAttribute('viewBox')!==before));}
document.body.appendChild(out);})();
</script></body>"""


def chromium_binary():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def run(cmd, **kw):
    result = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if result.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)} exited {result.returncode}:\n{result.stderr}")
    return result


def open_in_browser(chromium, page, probe=False):
    """The DOM after the page's script ran, and the browser's console errors."""
    if probe:
        probed = page + ".probe.html"
        with open(page, encoding="utf-8") as f:
            text = f.read()
        with open(probed, "w", encoding="utf-8") as f:
            f.write(text.replace("</body>", PROBE, 1))
        page = probed
    with tempfile.TemporaryDirectory() as profile:
        result = subprocess.run(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--enable-logging=stderr", "--v=0", f"--user-data-dir={profile}",
             "--virtual-time-budget=5000", "--dump-dom", "file://" + os.path.abspath(page)],
            capture_output=True, text=True, timeout=300)
    if result.returncode != 0 or "<html" not in result.stdout:
        sys.exit(f"FAIL: chromium could not open {page} (exit {result.returncode}):\n"
                 f"{result.stderr[-3000:]}")
    # Console messages of the page: "[...:INFO:CONSOLE(12)] "Uncaught ...", source: file://..."
    errors = [line for line in result.stderr.splitlines()
              if "CONSOLE" in line and "file://" in line]
    return result.stdout, errors


def check_page(chromium, page, kind, probe=False):
    dom, errors = open_in_browser(chromium, page, probe)
    failures = [f"console: {e}" for e in errors]
    charts = {}
    for m in re.finditer(r'<figure class="chart" data-chart="([^"]+)">(.*?)</figure>', dom, re.S):
        charts[m.group(1)] = len(re.findall(r'class="mark"', m.group(2)))
    for chart in CHARTS[kind]:
        if chart not in charts:
            failures.append(f"chart '{chart}' missing")
        elif charts[chart] == 0:
            failures.append(f"chart '{chart}' is empty")
    if kind == "single":
        failures += [f"missing '{note}'" for note in SINGLE_NOTES if note not in dom]
    if probe and 'data-zoomed="true"' not in dom:
        failures.append("the timeline did not zoom on a wheel event")
    size = os.path.getsize(page)
    print(f"{os.path.basename(page)}: {size} bytes, charts "
          + ", ".join(f"{c}={n}" for c, n in charts.items()))
    return failures, size


# The trace, parsed by the browser's own JSON parser in a page, summarized per process: its name,
# its threads' names, and how many complete events ("X") each thread has; flow arrows unpaired;
# events whose time stamp or duration is not a number >= 0.
TRACE_PAGE = """<!DOCTYPE html><html><body><pre id="result"></pre>
<script id="trace" type="application/json">%s</script>
<script>
var t=JSON.parse(document.getElementById('trace').textContent),procs={},flows={},bad=0;
function proc(pid){return procs[pid]||(procs[pid]={name:null,threads:{},events:{}});}
t.traceEvents.forEach(function(e){
 if(e.ph==='M'&&e.name==='process_name')proc(e.pid).name=e.args.name;
 else if(e.ph==='M'&&e.name==='thread_name')proc(e.pid).threads[e.tid]=e.args.name;
 else if(e.ph==='X'){var p=proc(e.pid);p.events[e.tid]=(p.events[e.tid]||0)+1;
  if(!(typeof e.ts==='number'&&e.ts>=0&&typeof e.dur==='number'&&e.dur>=0))bad++;}
 else if(e.ph==='s'||e.ph==='f'){flows[e.id]=(flows[e.id]||0)+(e.ph==='s'?1:-1);}});
var unpaired=Object.keys(flows).filter(function(k){return flows[k]!==0;}).length;
document.getElementById('result').textContent=JSON.stringify({processes:procs,unpaired:unpaired,bad:bad,unit:t.displayTimeUnit});
</script></body></html>"""


def check_trace(chromium, stepsim, src, out):
    """The trace of the small pipeline (8 ranks, 2 stages) read by the browser: every rank a
    process named after it, with its streams as named threads and its operations on them."""
    trace = os.path.join(out, "pipeline.trace.json")
    run([stepsim, "-q", "run", os.path.join(src, "tests/inputs/good/pipeline.yaml"),
         "--trace", trace])
    with open(trace, encoding="utf-8") as f:
        text = f.read()
    page = os.path.join(out, "trace-check.html")
    with open(page, "w", encoding="utf-8") as f:
        f.write(TRACE_PAGE % text.replace("</", "<\\/"))
    dom, errors = open_in_browser(chromium, page)
    failures = [f"console: {e}" for e in errors]
    m = re.search(r'<pre id="result">(.*?)</pre>', dom, re.S)
    if not m or not m.group(1):
        return failures + ["the browser did not parse the trace"]
    result = json.loads(html.unescape(m.group(1)))
    processes = result["processes"]
    for rank in range(8):
        p = processes.get(str(rank))
        if p is None or not (p["name"] or "").startswith(f"rank {rank} ("):
            failures.append(f"rank {rank}: no process named after it")
            continue
        names = set(p["threads"].values())
        for stream in ("compute", "tp", "pp", "pp-recv", "dp"):
            if stream not in names:
                failures.append(f"rank {rank}: no '{stream}' thread")
        streams = {p["threads"].get(tid): n for tid, n in p["events"].items()}
        for stream in ("compute", "tp", "dp"):
            if not streams.get(stream):
                failures.append(f"rank {rank}: no operation on '{stream}'")
        if not (streams.get("pp") or streams.get("pp-recv")):
            failures.append(f"rank {rank}: no pipeline send or receive")
    if result["unpaired"]:
        failures.append(f"{result['unpaired']} flow arrows without both ends")
    if result["bad"]:
        failures.append(f"{result['bad']} complete events without a time stamp and duration >= 0")
    print(f"{os.path.basename(trace)}: {len(text)} bytes, {len(processes)} processes in the browser")
    return failures


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stepsim", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--gpt3", action="store_true", help="also the 1,024-GPU GPT-3 example")
    parser.add_argument("--screenshot", help="also save a PNG of the quickstart report here")
    parser.add_argument("--trace", action="store_true",
                        help="check the Chrome trace in the browser instead of the reports")
    args = parser.parse_args()
    chromium = chromium_binary()
    if chromium is None:
        print("chromium is not installed (scripts/setup.sh installs it): skipped")
        return SKIP
    os.makedirs(args.out, exist_ok=True)
    src = args.source
    if args.trace:
        failures = check_trace(chromium, args.stepsim, src, args.out)
        for f in failures:
            print("FAIL:", f)
        return 1 if failures else 0
    pages = []
    quick = os.path.join(args.out, "quickstart.html")
    run([args.stepsim, "-q", "run", os.path.join(src, "examples/quickstart.yaml"), "--html", quick])
    pages.append((quick, "run", True))
    one_gpu = os.path.join(args.out, "one-gpu.yaml")
    with open(one_gpu, "w") as f:
        f.write(ONE_GPU)
    single = os.path.join(args.out, "single-rank.html")
    run([args.stepsim, "-q", "run", os.path.join(src, "examples/quickstart.yaml"),
         "-o", "topology=" + one_gpu, "-o", "parallelism.tp=1", "-o", "parallelism.dp=1",
         "-o", "parallelism.sp=false", "-o", "training.global_batch=1", "--html", single])
    pages.append((single, "single", True))
    compare = os.path.join(args.out, "compare-topologies.html")
    cmd = [args.stepsim, "-q", "compare", os.path.join(src, "examples/compare-topologies.yaml"),
           "--html", compare]
    for t in TOPOLOGIES:
        cmd += ["--topology", t]
    run(cmd)
    pages.append((compare, "compare", False))
    collective = os.path.join(args.out, "collective.html")
    run([args.stepsim, "-q", "collective", "-t", "dgx-h100", "-n", "8", "-s", "1MiB:16GiB",
         "--html", collective, "--published", os.path.join(src, "validation/cases.yaml")])
    pages.append((collective, "collective", False))
    if args.gpt3:
        gpt3 = os.path.join(args.out, "gpt3.html")
        run([args.stepsim, "-q", "run", os.path.join(src, "examples/gpt3-175b-superpod.yaml"),
             "--html", gpt3])
        pages.append((gpt3, "run", True))

    failures = []
    for page, kind, probe in pages:
        page_failures, size = check_page(chromium, page, kind, probe)
        if page.endswith("gpt3.html") and size >= MAX_GPT3_BYTES:
            page_failures.append(f"{size} bytes, not under {MAX_GPT3_BYTES}")
        failures += [f"{os.path.basename(page)}: {f}" for f in page_failures]
    if args.screenshot:
        with tempfile.TemporaryDirectory() as profile:
            run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                 f"--user-data-dir={profile}", "--window-size=980,1500",
                 f"--screenshot={os.path.abspath(args.screenshot)}", "file://" + os.path.abspath(quick)])
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
