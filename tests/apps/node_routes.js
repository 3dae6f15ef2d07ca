'use strict';
// A Node http server whose routes block the event loop, each in a named
// function, for the JS frame tests (tests/e2e/test_node.py). Run with no
// node flags. Prints its port first; keeps one record per request, the
// ground truth stalls are matched against (the route function, the
// wall-clock start and end of its work in ms, the garbage collections so
// far), served as JSON by /truth: kept in memory, so that no write of it
// lands in a measured iteration. A line tagged
// "// @name" is where function name blocks; the tests read the tags, not
// numbers.
//   /json      routeJson       JSON.stringify of a large object (a C++ builtin)
//   /pbkdf2    routePbkdf2     crypto.pbkdf2Sync (a C++ binding, OpenSSL's assembly)
//   /read      routeReadFile   fs.readFileSync of a large file
//   /spin      routeSpin       pure JS (spinInner), allocating
//   /wait      routeWait       Atomics.wait: the thread sleeps in futex, a blocking call
//   /late      routeLate       first called (and compiled) only when the test asks
//   /garbage   makeGarbage     allocation between stalls: GC pressure
// ?small=1 makes the work cheap (warming a function up); ?n=N repeats it.
const http = require('http');
const crypto = require('crypto');
const fs = require('fs');
const { performance, PerformanceObserver } = require('perf_hooks');

const BIG_FILE = process.env.BIG_FILE || __filename;
const truth = [];

function makeBig(n) {
  const out = [];
  for (let i = 0; i < n; i++)
    out.push({ id: i, name: 'item' + i, tags: ['a', 'b', 'c'], nested: { x: i * 2, y: 'z' } });
  return out;
}
const bigObject = makeBig(120000);
const smallObject = makeBig(4);

// The slow routes repeat their work for at least 40 ms: a fast, quiet host must not
// make them shorter than the tests' thresholds.
function routeJson(small) {
  const until = Date.now() + (small ? 0 : 40);
  let n = 0;
  do { // @routeJson
    n += JSON.stringify(small ? smallObject : bigObject).length; // @routeJson
  } while (Date.now() < until); // @routeJson
  return n;
}

function routePbkdf2(small) {
  const until = Date.now() + (small ? 0 : 40);
  let n = 0;
  do { // @routePbkdf2
    n += crypto.pbkdf2Sync('secret', 'salt', small ? 1 : 50000, 32, 'sha256').length; // @routePbkdf2
  } while (Date.now() < until); // @routePbkdf2
  return n;
}

function routeReadFile(small) {
  return fs.readFileSync(small ? __filename : BIG_FILE).length; // @routeReadFile
}

function spinInner(limit) {
  let acc = 0;
  for (let i = 0; i < limit; i++) { // @spinInner
    const o = { v: i, w: [i, i + 1] }; // @spinInner
    acc = (acc + o.v * 31 + o.w[1]) % 1000003; // @spinInner
  } // @spinInner
  return acc;
}

function routeSpin(small) {
  const until = Date.now() + (small ? 0 : 40);
  let acc = 0;
  do { // @routeSpin
    acc += spinInner(small ? 10 : 5000); // @routeSpin
  } while (Date.now() < until); // @routeSpin
  return acc;
}

const waitCell = new Int32Array(new SharedArrayBuffer(4));

function routeWait(small) {
  return Atomics.wait(waitCell, 0, 0, small ? 0 : 40).length; // @routeWait
}

function routeLate(small) {
  let h = 0;
  const until = Date.now() + (small ? 0 : 40);
  do { // @routeLate
    for (let i = 0; i < 20000; i++) // @routeLate
      h = (h * 33 + i) | 0; // @routeLate
  } while (Date.now() < until); // @routeLate
  return h;
}

let garbageKeep = [];

function makeGarbage(small) {
  // short-lived and medium-lived objects: scavenges and, with the ring of
  // survivors, old-space growth and mark-compacts
  for (let i = 0; i < (small ? 10 : 200000); i++) {
    const a = { i, s: 'g' + i, arr: new Array(8).fill(i) };
    if (i % 64 === 0) garbageKeep.push(a);
  }
  if (garbageKeep.length > 20000) garbageKeep = garbageKeep.slice(10000);
  return garbageKeep.length;
}

// garbage collections since start, by the runtime's own count (no flags needed)
// (a named function: a sample may land in it, and the tests know the app's functions by name)
let gcs = 0;
function countGcs(list) {
  gcs += list.getEntries().length;
}
new PerformanceObserver(countGcs).observe({ entryTypes: ['gc'] });

const routes = {
  '/json': routeJson,
  '/pbkdf2': routePbkdf2,
  '/read': routeReadFile,
  '/spin': routeSpin,
  '/wait': routeWait,
  '/late': routeLate,
  '/garbage': makeGarbage,
};

function handle(req, res) {
  const url = new URL(req.url, 'http://x');
  if (url.pathname === '/truth') {
    res.end(JSON.stringify(truth));
    return;
  }
  const fn = routes[url.pathname];
  if (!fn) {
    res.writeHead(404);
    res.end();
    return;
  }
  const n = Number(url.searchParams.get('n') || 1);
  const small = url.searchParams.get('small') === '1';
  const start = performance.timeOrigin + performance.now();
  let r = 0;
  for (let i = 0; i < n; i++)
    r += fn(small); // @handle
  const end = performance.timeOrigin + performance.now();
  if (!small)
    truth.push({ fn: fn.name, start, end, gcs });
  res.end(String(r));
}

const server = http.createServer(handle);
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
