// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * loopfleet: event loops for cost.py's collector and sampling rows.
 * Usage:
 *   loopfleet fleet THREADS SECONDS   THREADS epoll loops, each iteration
 *                                     ~20 us of CPU work then epoll_wait of
 *                                     up to 2 ms: what the collector has to
 *                                     keep up with, none of it a stall
 *   loopfleet stalls COUNT MS         one epoll loop: COUNT iterations of MS
 *                                     ms of CPU work each, 50 ms apart; prints
 *                                     each one's on-CPU ns (its own
 *                                     schedstat), one a line, at the end
 * Prints its pid first and waits for a line on stdin before it starts.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>

static volatile uint64_t work_sink;

static uint64_t clock__ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* this thread's time on CPU, from its own schedstat */
static uint64_t oncpu__ns(void)
{
	unsigned long long ns = 0;
	FILE *f = fopen("/proc/thread-self/schedstat", "r");

	if (f) {
		if (fscanf(f, "%llu", &ns) != 1)
			ns = 0;
		fclose(f);
	}
	return ns;
}

static void spin__ns(uint64_t ns)
{
	uint64_t end = clock__ns() + ns, x = end;

	while (clock__ns() < end)
		for (int i = 0; i < 64; i++)
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	work_sink = x;
}

static int loop__epoll(void)
{
	int ep = epoll_create1(EPOLL_CLOEXEC);

	if (ep < 0) {
		perror("loopfleet: epoll_create1");
		exit(1);
	}
	return ep;
}

static double seconds;

static void *fleet__thread(void *arg)
{
	uint64_t end = clock__ns() + (uint64_t)(seconds * 1e9);
	struct epoll_event ev;
	int ep = loop__epoll();

	(void)arg;
	while (clock__ns() < end) {
		epoll_wait(ep, &ev, 1, 2);
		spin__ns(20000);
	}
	return NULL;
}

static int fleet(int n)
{
	pthread_t *t = calloc((size_t)n, sizeof(*t));

	if (!t)
		return 1;
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, fleet__thread, NULL))
			return 1;
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	return 0;
}

static int stalls(int n, double ms)
{
	uint64_t *oncpu = calloc((size_t)n, sizeof(*oncpu)), before;
	struct epoll_event ev;
	int ep = loop__epoll();

	if (!oncpu)
		return 1;
	for (int i = 0; i < n; i++) {
		epoll_wait(ep, &ev, 1, 50);
		before = oncpu__ns();
		spin__ns((uint64_t)(ms * 1e6));
		oncpu[i] = oncpu__ns() - before;
	}
	epoll_wait(ep, &ev, 1, 50);
	for (int i = 0; i < n; i++)
		printf("%llu\n", (unsigned long long)oncpu[i]);
	return 0;
}

int main(int argc, char **argv)
{
	char line[16];

	if (argc < 3) {
		fprintf(stderr, "usage: loopfleet fleet THREADS SECONDS | stalls COUNT MS\n");
		return 2;
	}
	printf("%d\n", (int)getpid());
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 2;
	if (!strcmp(argv[1], "fleet") && argc == 4) {
		seconds = atof(argv[3]);
		return fleet(atoi(argv[2]));
	}
	if (!strcmp(argv[1], "stalls") && argc == 4)
		return stalls(atoi(argv[2]), atof(argv[3]));
	fprintf(stderr, "loopfleet: unknown mode %s\n", argv[1]);
	return 2;
}
