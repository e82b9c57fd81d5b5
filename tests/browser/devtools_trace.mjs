// Parses a Chrome trace with the trace engine of Chrome DevTools' Performance panel
// (@paulirish/trace_engine, published from the Chromium DevTools source; tests/browser/viewer pins
// it) and prints what the panel would show, as JSON on stdout: for every process with trace
// events, its threads with their name, their number of slices, and how many of those are roots of
// the thread's slice tree (a slice that overlaps the one before it becomes its child).
//
//   node tests/browser/devtools_trace.mjs TRACE.json
import {analyzeTrace} from './viewer/node_modules/@paulirish/trace_engine/analyze-trace.mjs';

const {parsedTrace} = await analyzeTrace(process.argv[2]);
const data = parsedTrace.data ?? parsedTrace;
const processes = {};
for (const [pid, process] of data.Renderer.processes) {
  const threads = {};
  for (const [tid, thread] of process.threads) {
    threads[tid] = {name: thread.name, slices: thread.entries.length, roots: thread.tree?.roots.size ?? 0};
  }
  processes[pid] = threads;
}
console.log(JSON.stringify(processes));
