#!/usr/bin/env node
// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// loopwatch's Node demo: an http server whose routes block its event loop now and then,
// and a client in a second process that keeps it busy. Run it, then point loopwatch at it:
//
//     node tools/demo/slow_node.js &
//     build/loopwatch -p $(pgrep -f slow_node.js | head -1) -d 10 | cat
//
// GET /fast answers at once; GET /hash runs crypto.pbkdf2Sync on the loop (~30 ms);
// GET /config reads a file with fs.readFileSync after a 40 ms busy wait. Stops by itself
// after --seconds (default 600). Node's standard library only.
'use strict';
const http = require('http');
const crypto = require('crypto');
const fs = require('fs');
const { spawn } = require('child_process');

const args = process.argv.slice(2);
const opt = (name, dflt) => {
	const i = args.indexOf(name);
	return i >= 0 ? Number(args[i + 1]) : dflt;
};
const seconds = opt('--seconds', 600);

function hashPassword() {
	return crypto.pbkdf2Sync('secret', 'salt', 60000, 32, 'sha256').toString('hex'); // the stall
}

function loadConfig() {
	const until = Date.now() + 40;
	while (Date.now() < until) // the stall
		;
	return fs.readFileSync(__filename).length.toString();
}

function client(port) {
	const end = Date.now() + seconds * 1000;
	const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
	let n = 0;
	const next = () => {
		if (Date.now() > end)
			return process.exit(0);
		n++;
		const path = n % 40 === 0 ? '/hash' : n % 40 === 20 ? '/config' : '/fast';
		http.get({ host: '127.0.0.1', port, path, agent }, (res) => {
			res.resume();
			res.on('end', () => setTimeout(next, 5));
		}).on('error', () => process.exit(0)); // the server is gone
	};
	next();
}

if (args.includes('--client')) {
	client(opt('--client', 0));
} else {
	const server = http.createServer((req, res) => {
		let body = 'fast';
		if (req.url === '/hash')
			body = hashPassword();
		else if (req.url === '/config')
			body = loadConfig();
		res.end(body);
	});
	server.listen(0, '127.0.0.1', () => {
		const port = server.address().port;
		console.log(`slow_node: pid ${process.pid} serving on 127.0.0.1:${port}`);
		const load = spawn(process.execPath, [__filename, '--client', String(port),
			'--seconds', String(seconds)], { stdio: 'inherit' });
		setTimeout(() => { load.kill(); process.exit(0); }, seconds * 1000);
	});
	process.on('SIGTERM', () => process.exit(0));
}
