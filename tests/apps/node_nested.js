// A Node http server whose /work route runs `sleep 0.05` with child_process.execSync:
// libuv runs a second loop, on its own epoll fd, inside the route. Prints its port.
// Ground truth at /stats, per request: the route's own time and its thread's on-CPU
// and run-queue time meanwhile (/proc/thread-self/schedstat), in ns.
const fs = require('fs');
const http = require('http');
const { execSync } = require('child_process');

const requests = [];

function schedstat() {
  const [oncpu, runq] = fs.readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ');
  return [Number(oncpu), Number(runq)];
}

const server = http.createServer((req, res) => {
  if (req.url === '/stats') {
    res.end(JSON.stringify({ pid: process.pid, requests }));
    return;
  }
  const start = process.hrtime.bigint();
  const [oncpu, runq] = schedstat();
  execSync('sleep 0.05');
  res.end('ok');
  const [oncpu2, runq2] = schedstat();
  requests.push({ handler_ns: Number(process.hrtime.bigint() - start),
                  handler_oncpu_ns: oncpu2 - oncpu, handler_runq_ns: runq2 - runq });
});
// a heartbeat keeps the loop waking, so a tracer sees its wait calls early
setInterval(() => {}, 50);
// one request of its own first: compiling the route's code stays out of the measured ones
server.listen(0, '127.0.0.1', () => {
  const port = server.address().port;
  http.get({ host: '127.0.0.1', port, path: '/warm' }, (res) => {
    res.resume();
    res.on('end', () => {
      requests.length = 0;
      console.log(port);
    });
  });
});
