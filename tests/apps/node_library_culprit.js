// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// A route that calls into a module of node_modules (slowlib.crunch: 40 ms of CPU), 6 times
// 5 ms apart once a line comes on stdin; prints its pid first. The culprit is the route,
// the application's own code, not the module's function.
'use strict';
const slowlib = require('slowlib');

function routeReport() {
	return slowlib.crunch(40); // @routeReport
}

let left = 6;
function tick() {
	routeReport();
	if (--left > 0)
		setTimeout(tick, 5);
	else
		setTimeout(() => process.exit(0), 50);
}

console.log(process.pid);
process.stdin.once('data', () => {
	process.stdin.pause();
	setTimeout(tick, 5);
});
