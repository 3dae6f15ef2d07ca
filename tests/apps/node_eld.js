// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// Node's own view of its loop's lag beside loopwatch's: prints its pid, waits for a line on
// stdin, then for SECONDS stalls 30 ms of CPU every ~100 ms while
// perf_hooks.monitorEventLoopDelay (resolution 10 ms) samples the loop, and writes that
// histogram's percentiles (ms; every quarter percentile from the median in "pct") to
// OUT as JSON before it exits.
// usage: node node_eld.js OUT SECONDS
'use strict';
const fs = require('fs');
const { monitorEventLoopDelay } = require('perf_hooks');

const [out, seconds] = [process.argv[2], Number(process.argv[3] || 5)];

function spin(ms) {
	const until = process.hrtime.bigint() + BigInt(ms * 1e6);
	while (process.hrtime.bigint() < until)
		;
}

console.log(process.pid);
process.stdin.once('data', () => {
	process.stdin.pause();
	const h = monitorEventLoopDelay({ resolution: 10 });
	h.enable();
	const end = Date.now() + seconds * 1000;
	const tick = () => {
		spin(30);
		if (Date.now() < end)
			return setTimeout(tick, 70);
		h.disable();
		const ms = (ns) => Number(ns) / 1e6;
		// every quarter percentile from the median up: the test reads each quantile
		// within the sample's own error (the ranks q +- 3 sigma), not at q alone
		const pct = {};
		for (let q = 50; q <= 100; q += 0.25)
			pct[q.toFixed(2)] = ms(h.percentile(q));
		fs.writeFileSync(out, JSON.stringify({ p50: ms(h.percentile(50)),
			p90: ms(h.percentile(90)), p99: ms(h.percentile(99)), max: ms(h.max),
			count: h.count, pct }));
		process.exit(0);
	};
	setTimeout(tick, 70);
});
