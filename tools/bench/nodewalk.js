// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// A node loop thread and a worker blocking in turn (Atomics.wait ping-pong),
// DEPTH JS calls deep: under loopwatch every round trip is two blocked
// syscalls whose stacks it captures, each walking the V8 frames. nodewalk.py
// times batches with the walk on and off. Prints its pid, then for each
// "go N" line on stdin runs N round trips in one busy period and prints the
// median ns per round trip over batches of BATCH.
'use strict';
const { Worker, isMainThread, workerData } = require('worker_threads');

const BATCH = 200;

function deep(n, fn) {
  return n > 0 ? deep(n - 1, fn) + 0 : fn();
}

if (isMainThread) {
  const depth = Number(process.argv[2] || 0);
  const cells = new Int32Array(new SharedArrayBuffer(8));
  const worker = new Worker(__filename, { workerData: { cells, depth } });
  const roundTrips = (n) => {
    for (let i = 0; i < n; i++) {
      Atomics.store(cells, 0, 1);
      Atomics.notify(cells, 0);
      Atomics.wait(cells, 1, 0);
      Atomics.store(cells, 1, 0);
    }
  };
  const measure = (n) => {
    const batches = [];
    roundTrips(BATCH);
    for (let b = 0; b < Math.max(1, n / BATCH); b++) {
      const t0 = process.hrtime.bigint();
      roundTrips(BATCH);
      batches.push(Number(process.hrtime.bigint() - t0) / BATCH);
    }
    batches.sort((x, y) => x - y);
    return batches[batches.length >> 1];
  };
  worker.on('online', () => {
    console.log(process.pid);
    let buf = '';
    process.stdin.on('data', (d) => {
      buf += d;
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const n = Number(buf.slice(0, nl).split(' ')[1]);
        buf = buf.slice(nl + 1);
        // one busy period of the loop, depth JS frames below the waits
        console.log(deep(depth, () => measure(n)).toFixed(1));
      }
    });
    process.stdin.on('end', () => process.exit(0));
  });
} else {
  const { cells, depth } = workerData;
  // after the worker's loop has waited once: then it is a loop thread in a busy period
  setTimeout(() => deep(depth, () => {
    for (;;) {
      Atomics.wait(cells, 0, 0);
      Atomics.store(cells, 0, 0);
      Atomics.store(cells, 1, 1);
      Atomics.notify(cells, 1);
    }
  }), 50);
}
