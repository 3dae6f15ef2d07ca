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
	let text = '';
	for (let i = 0; i < calls; i++) {
		const t0 = process.hrtime.bigint();
		text = JSON.stringify(doc);
		stringify.push(Number(process.hrtime.bigint() - t0) / 1e9);
	}
	for (let i = 0; i < calls; i++) {
		const t0 = process.hrtime.bigint();
		JSON.parse(text);
		parse.push(Number(process.hrtime.bigint() - t0) / 1e9);
	}
	// by hand: one more JSON.stringify would be counted too
	fs.writeFileSync(out, `{"stringify_s":[${stringify.join(',')}],"parse_s":[${parse.join(',')}]}`);
	process.exit(0);
});
