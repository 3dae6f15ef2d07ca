// A Node loop that, on a line on stdin, makes a known number of JSON.stringify and
// JSON.parse calls on a large object, timing each, and writes the timings as ground truth.
// usage: node probe_json.js OUT.json CALLS
const fs = require('fs');
const [out, calls] = [process.argv[2], Number(process.argv[3])];
const doc = { items: [] };
for (let i = 0; i < 20000; i++)
	doc.items.push({ id: i, name: `item-${i}`, tags: ['a', 'b', 'c'], nested: { x: i, y: [i, i + 1] } });

// iterate while waiting, so a tracer started now sees the loop before the work starts
const tick = setInterval(() => {}, 50);
console.log(process.pid);
process.stdin.once('data', () => {
	clearInterval(tick);
	const stringify = [], parse = [];
	// run-queue time around each call (schedstat's run_delay): a loaded host's
	// preemption inside the timed window but outside the call itself
	const runq = { stringify: 0, parse: 0 };
	const runDelay = () => Number(fs.readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[1]);
	let text = '';
	for (let i = 0; i < calls; i++) {
		const r0 = runDelay(), t0 = process.hrtime.bigint();
		text = JSON.stringify(doc);
		stringify.push(Number(process.hrtime.bigint() - t0) / 1e9);
		runq.stringify += (runDelay() - r0) / 1e9;
	}
	for (let i = 0; i < calls; i++) {
		const r0 = runDelay(), t0 = process.hrtime.bigint();
		JSON.parse(text);
		parse.push(Number(process.hrtime.bigint() - t0) / 1e9);
		runq.parse += (runDelay() - r0) / 1e9;
	}
	// by hand: one more JSON.stringify would be counted too
	fs.writeFileSync(out, `{"stringify_s":[${stringify.join(',')}],"parse_s":[${parse.join(',')}],` +
		`"stringify_runq_s":${runq.stringify},"parse_runq_s":${runq.parse}}`);
	process.exit(0);
});
