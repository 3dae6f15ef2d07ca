// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Many fast iterations and a few stalls: an epoll loop on a 100 us timerfd
 * that spins 50 us per tick, and STALLS times, evenly spread, STALL_MS
 * instead. Per iteration the stalls are a rounding error; for an event that
 * arrives at a random moment they are what it most likely waits for. Records
 * each iteration's busy time (from the wait's return to the next wait call)
 * and the span from the first wait call to the return of the last.
 *
 * usage: lagwork OUT.json ITERATIONS STALLS STALL_MS [--go]
 */
#include <stdlib.h>
#include <string.h>
#include "groundtruth.h"

int main(int argc, char **argv)
{
	int n, stalls, every, tfd, ep, go = 0;
	uint64_t stall_ns, *busy, span, expirations;
	struct epoll_event out[4];
	FILE *f;

	if (argc < 5) {
		fprintf(stderr, "usage: lagwork OUT ITERATIONS STALLS STALL_MS [--go]\n");
		return 2;
	}
	n = atoi(argv[2]);
	stalls = atoi(argv[3]);
	stall_ns = (uint64_t)atoi(argv[4]) * 1000000ull;
	go = argc > 5 && !strcmp(argv[5], "--go");
	if (n <= 0 || stalls < 0 || stalls > n)
		return 2;
	every = stalls ? n / stalls : n + 1;
	busy = calloc((size_t)n, sizeof(*busy));
	if (!busy || go__await(go))
		return 1;
	ep = ticker__open(100000, &tfd);
	span = now_ns();
	for (int i = 0; i < n; i++) {
		uint64_t t0;

		epoll_wait(ep, out, 4, -1);
		t0 = now_ns();
		if (read(tfd, &expirations, sizeof(expirations)) < 0)
			return 1;
		spin_ns(i % every == every / 2 ? stall_ns : 50000);
		busy[i] = now_ns() - t0;
	}
	/* a last wait closes the last iteration for a tracer */
	epoll_wait(ep, out, 4, 0);
	span = now_ns() - span;
	f = fopen(argv[1], "w");
	if (!f)
		return 1;
	fprintf(f, "{\"pid\":%d,\"tid\":%ld,\"span_ns\":%llu,\"busy_ns\":[", getpid(),
		syscall(SYS_gettid), (unsigned long long)span);
	for (int i = 0; i < n; i++)
		fprintf(f, "%s%llu", i ? "," : "", (unsigned long long)busy[i]);
	fprintf(f, "]}\n");
	return fclose(f) ? 1 : 0;
}
