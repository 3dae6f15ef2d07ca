// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A storm of short stalls: THREADS loop threads, each spinning SPIN_US
 * microseconds between epoll_wait(0) calls for SECONDS, so that under
 * --threshold below SPIN_US every iteration is a stall. Prints, as ground
 * truth, how many iterations it made: the stall rate a tracer had to keep up with.
 *
 * usage: stormwork SECONDS SPIN_US THREADS [--go]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>
#include "groundtruth.h"

static uint64_t end_ns, spin_ns_each;
static atomic_ulong iterations;

static void *storm__run(void *arg)
{
	struct epoll_event out;
	int ep = epoll_create1(0);
	unsigned long n = 0;

	(void)arg;
	while (now_ns() < end_ns) {
		epoll_wait(ep, &out, 1, 0);
		spin_ns(spin_ns_each);
		n++;
	}
	epoll_wait(ep, &out, 1, 0);
	atomic_fetch_add(&iterations, n);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[64];
	double seconds;
	int nthreads;
	char line[16];

	if (argc < 4) {
		fprintf(stderr, "usage: stormwork SECONDS SPIN_US THREADS [--go]\n");
		return 2;
	}
	seconds = atof(argv[1]);
	spin_ns_each = (uint64_t)(atof(argv[2]) * 1000);
	nthreads = atoi(argv[3]);
	if (nthreads < 1 || nthreads > 64)
		return 2;
	printf("%d\n", getpid());
	fflush(stdout);
	if (argc > 4 && !strcmp(argv[4], "--go") && !fgets(line, sizeof(line), stdin))
		return 1;
	end_ns = now_ns() + (uint64_t)(seconds * 1e9);
	for (int i = 0; i < nthreads; i++)
		pthread_create(&t[i], NULL, storm__run, NULL);
	for (int i = 0; i < nthreads; i++)
		pthread_join(t[i], NULL);
	printf("{\"iterations\":%lu,\"seconds\":%.3f}\n", (unsigned long)iterations, seconds);
	return 0;
}
