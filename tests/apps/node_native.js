// A Node http server whose routes stall the loop in known ways, for the native-stack and
// probe tests (node_routes.js is the JS frame tests'); prints its port, serves
// until killed, and times each handler itself, in wall and CPU ms (GET /truth returns
// them as JSON: route -> [{wall, cpu}]; on a loaded host a call's probed time lies between).
//   /report    JSON.stringify of a large object in renderReport
//   /login     crypto.pbkdf2Sync in checkPassword
//   /late      a handler compiled only when first requested (after any tracer started)
const crypto = require('crypto');
const http = require('http');

const truth = { report: [], login: [], late: [] };
const big = Array.from({ length: 60000 }, (_, i) => ({ id: i, name: 'user' + i, tags: ['a', 'b'] }));

function renderReport() {
  return JSON.stringify(big);
}

function checkPassword() {
  return crypto.pbkdf2Sync('secret', 'salt', 60000, 32, 'sha256');
}

let lateHandler = null;

function timed(kind, fn) {
  const t0 = process.hrtime.bigint(), c0 = process.cpuUsage();
  fn();
  const c = process.cpuUsage(c0);
  truth[kind].push({ wall: Number(process.hrtime.bigint() - t0) / 1e6,
                     cpu: (c.user + c.system) / 1e3 });
}

const server = http.createServer((req, res) => {
  if (req.url === '/report') {
    timed('report', renderReport);
  } else if (req.url === '/login') {
    timed('login', checkPassword);
  } else if (req.url === '/late') {
    // compiled from source on first use: new code the JIT writes to the perf map now
    // hot from its first call: V8 compiles it to machine code while it runs (OSR)
    if (!lateHandler)
      lateHandler = new Function('big', 'const few = big.slice(0, 40); return function lateHandler() {' +
        ' let n = 0; for (let k = 0; k < 4000; k++) n += JSON.stringify(few).length; return n; }')(big);
    timed('late', lateHandler);
  } else if (req.url === '/truth') {
    res.end(JSON.stringify(truth));
    return;
  }
  res.end('ok');
});
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
