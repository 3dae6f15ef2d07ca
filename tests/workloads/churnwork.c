// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Churn: PROCS processes one after another (a few at a time), each starting
 * THREADS loop threads that make three short epoll iterations and exit. What
 * a tracer keeps of them must go once they are gone.
 *
 * usage: churnwork PROCS THREADS [--go]
 * Prints its pid; with --go waits for a line on stdin first.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>
#include "groundtruth.h"

#define PARALLEL 4

static void *loop__run(void *arg)
{
	struct epoll_event out;
	int ep = epoll_create1(0);

	(void)arg;
	for (int i = 0; i < 3; i++) {
		epoll_wait(ep, &out, 1, 0);
		spin_ns(100000);
	}
	epoll_wait(ep, &out, 1, 0);
	close(ep);
	return NULL;
}

static void process__run(int threads)
{
	pthread_t *t = calloc((size_t)threads, sizeof(*t));

	for (int i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, loop__run, NULL);
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	_exit(0);
}

int main(int argc, char **argv)
{
	int procs, threads, running = 0;
	char line[16];

	if (argc < 3) {
		fprintf(stderr, "usage: churnwork PROCS THREADS [--go]\n");
		return 2;
	}
	procs = atoi(argv[1]);
	threads = atoi(argv[2]);
	printf("%d\n", getpid());
	fflush(stdout);
	if (argc > 3 && !strcmp(argv[3], "--go") && !fgets(line, sizeof(line), stdin))
		return 1;
	for (int p = 0; p < procs; p++) {
		pid_t child;

		if (running == PARALLEL) {
			wait(NULL);
			running--;
		}
		child = fork();
		if (!child)
			process__run(threads);
		if (child > 0)
			running++;
	}
	while (running-- > 0)
		wait(NULL);
	return 0;
}
