// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// Checks a --trace file against the Trace Event format (JSON object form), then loads it
// with a real consumer, @tracerbench/trace-model (installed by tools/deps.sh test), which
// builds processes, threads and the slice tree by containment as trace viewers do.
// Prints one JSON object: the threads and their complete slices with their parents.
// usage: node tracecheck.js TRACE.json NODE_MODULES_DIR
'use strict';
const fs = require('fs');
const path = require('path');

const [file, modules] = process.argv.slice(2);
const { buildModel } = require(path.resolve(modules, '@tracerbench/trace-model'));

function fail(msg) {
  process.stderr.write('tracecheck: ' + msg + '\n');
  process.exit(1);
}

const trace = JSON.parse(fs.readFileSync(file, 'utf8'));
if (typeof trace !== 'object' || !Array.isArray(trace.traceEvents))
  fail('no traceEvents array');
if (trace.displayTimeUnit !== undefined && !['ms', 'ns'].includes(trace.displayTimeUnit))
  fail('displayTimeUnit must be ms or ns');
const phases = new Set(['X', 'B', 'E', 'i', 'I', 'M', 'C', 's', 't', 'f']);
const metadata = new Set(['process_name', 'thread_name', 'process_sort_index',
  'thread_sort_index', 'process_labels']);
for (const [i, e] of trace.traceEvents.entries()) {
  const where = 'event ' + i + ' ' + JSON.stringify(e).slice(0, 200);
  if (typeof e.name !== 'string') fail(where + ': name must be a string');
  if (!phases.has(e.ph)) fail(where + ': unknown phase');
  if (!Number.isInteger(e.pid) || !Number.isInteger(e.tid)) fail(where + ': pid/tid');
  if (e.args !== undefined && (typeof e.args !== 'object' || Array.isArray(e.args)))
    fail(where + ': args must be an object');
  if (e.ph === 'M') {
    if (!metadata.has(e.name)) fail(where + ': unknown metadata event');
    if (typeof e.args.name !== 'string' && e.name.endsWith('_name')) fail(where + ': no name');
    continue;
  }
  if (typeof e.ts !== 'number' || !isFinite(e.ts)) fail(where + ': ts must be a number');
  if (e.ph === 'X' && (typeof e.dur !== 'number' || !(e.dur >= 0)))
    fail(where + ': a complete event needs dur >= 0');
  if (e.ph === 'i' && !['g', 'p', 't'].includes(e.s)) fail(where + ': instant scope');
  // a flow (arrow): an id shared by its start and end, bound to enclosing slices
  if (['s', 't', 'f'].includes(e.ph) && typeof e.id !== 'string' && !Number.isInteger(e.id))
    fail(where + ': a flow event needs an id');
  if (e.ph === 'f' && e.bp !== undefined && e.bp !== 'e') fail(where + ': flow binding point');
}
// every flow that starts ends, and the other way round
const flows = new Map();
for (const e of trace.traceEvents) {
  if (e.ph === 's' || e.ph === 'f')
    flows.set(e.id, (flows.get(e.id) || 0) + (e.ph === 's' ? 1 : -1));
}
for (const [id, n] of flows) {
  if (n !== 0) fail('flow ' + id + ' has ' + (n > 0 ? 'no end' : 'no start'));
}

const model = buildModel(trace);
const out = { threads: [] };
for (const p of model.processes) {
  for (const t of p.threads) {
    // slices of a thread must nest: a child ends within its parent
    const slices = t.events.filter((e) => e.isComplete());
    for (const s of slices) {
      if (s.parent && s.end > s.parent.end + 1e-3)
        fail('slice ' + s.name + ' ends after its parent ' + s.parent.name);
    }
    out.threads.push({
      pid: p.id, tid: t.id, name: t.name, process: p.name,
      slices: slices.map((s) => ({
        name: s.name, cat: s.traceEvent.cat, start: s.start, end: s.end,
        parent: s.parent ? s.parent.traceEvent.cat : null, args: s.args,
      })),
      instants: t.events.filter((e) => e.ph === 'i').map((e) => ({
        name: e.name, cat: e.traceEvent.cat, ts: e.start, args: e.args })),
    });
  }
}
process.stdout.write(JSON.stringify(out));
