#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Inside a test-kernels guest (tests/kernels/run.sh): the kernel, the largest task
# storage value it creates, the hooks loopwatch chooses there (its start line) and what
# it does without (a line each), then the core cases named in the arguments (core.py),
# or the bench (bench.py) if the first argument is "bench". A kernel loopwatch refuses
# (older than its minimum) gets its one line of refusal and nothing more.
echo "kernel $(uname -r)"
/lwk/build/kernels/storage_limit 2>&1
said=$(/lwk/build/loopwatch --duration 1 2>&1 >/dev/null)
echo "$said" | grep -E "^loopwatch: (tracing event loops|this kernel .* has no .*: the )"
if echo "$said" | grep -E "needs Linux"; then
	exit 1
fi
cd /tmp || exit 1
if [ "$1" = bench ]; then
	shift
	exec python3 /lwk/repo/tests/kernels/bench.py /lwk/build "$@" 2>&1
fi
exec python3 /lwk/repo/tests/kernels/core.py /lwk/build "$@" 2>&1
