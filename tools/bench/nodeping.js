// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// cost.py's node server: prints its port; GET /ping answers "pong" (the
// throughput rows, under wrk); each line on stdin makes one JSON.stringify of
// a small object and prints "stringified" (the startup row: is a call made
// right after loopwatch starts counted?).
const http = require('http');
const server = http.createServer((req, res) => res.end('pong'));
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
process.stdin.on('data', () => {
	JSON.stringify({ at: Date.now(), items: [1, 2, 3] });
	console.log('stringified');
});
