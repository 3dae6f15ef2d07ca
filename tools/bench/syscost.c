// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * syscost: time one tight syscall loop and print its cost in ns per call.
 * Usage: syscost WORKLOAD ITERATIONS
 *
 * The calls are timed in batches of BATCH_CALLS, each short next to a
 * scheduler time slice, and the median batch is printed: on a busy 2-core
 * machine a batch that got preempted or lost its vCPU is an outlier the
 * median drops, where one clock around all the calls would charge it in full.
 *
 * A workload is a setup (e.g. the first wait call that makes the thread a
 * loop thread) and a loop body; add one by adding a row to workloads[].
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>

#define BATCH_CALLS 10000

struct workload {
	const char *name;
	const char *doc;
	/* returns what calls needs (an fd), or -1 with errno set */
	int (*setup)(void);
	void (*calls)(int fd, long n);
};

static long long clock__ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int none__setup(void)
{
	return 0;
}

/* the first wait call is what makes this thread a loop thread */
static int loop__setup(void)
{
	struct epoll_event ev;
	int epfd = epoll_create1(EPOLL_CLOEXEC);

	if (epfd >= 0 && epoll_wait(epfd, &ev, 1, 0) < 0)
		return -1;
	return epfd;
}

static void getppid__calls(int fd, long n)
{
	(void)fd;
	for (long i = 0; i < n; i++)
		getppid();
}

/* glibc's epoll_wait is epoll_wait or epoll_pwait per arch: both are traced */
static void epoll_wait__calls(int epfd, long n)
{
	struct epoll_event ev;

	for (long i = 0; i < n; i++)
		epoll_wait(epfd, &ev, 1, 0);
}

static const struct workload workloads[] = {
	{ "getppid", "getppid() on a thread that never waits", none__setup, getppid__calls },
	{ "epoll0", "epoll_wait(epfd, .., 0) on a loop thread: one iteration per call",
	  loop__setup, epoll_wait__calls },
	{ "loop-getppid", "getppid() on a thread that is a loop thread", loop__setup,
	  getppid__calls },
};

#define NWORKLOADS (sizeof(workloads) / sizeof(workloads[0]))

static int ns__cmp(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return (x > y) - (x < y);
}

/* median ns per call over the batches, or -1 with errno set */
static double workload__measure(const struct workload *w, long iters)
{
	long nbatches = (iters + BATCH_CALLS - 1) / BATCH_CALLS;
	long long *batch_ns, start;
	double median_ns;
	int fd;

	fd = w->setup();
	if (fd < 0)
		return -1;
	batch_ns = calloc(nbatches, sizeof(*batch_ns));
	if (!batch_ns)
		return -1;
	/* page faults, caches and the tracer's first-sight work stay out */
	w->calls(fd, iters / 10);
	for (long b = 0; b < nbatches; b++) {
		start = clock__ns();
		w->calls(fd, BATCH_CALLS);
		batch_ns[b] = clock__ns() - start;
	}
	qsort(batch_ns, nbatches, sizeof(*batch_ns), ns__cmp);
	median_ns = (double)batch_ns[nbatches / 2] / BATCH_CALLS;
	free(batch_ns);
	return median_ns;
}

static void usage__exit(int status)
{
	FILE *f = status ? stderr : stdout;

	fprintf(f, "Usage: syscost WORKLOAD ITERATIONS\n"
		"Prints the median ns per call over batches of %d calls. Workloads:\n",
		BATCH_CALLS);
	for (size_t i = 0; i < NWORKLOADS; i++)
		fprintf(f, "  %-14s %s\n", workloads[i].name, workloads[i].doc);
	exit(status);
}

int main(int argc, char **argv)
{
	const struct workload *w = NULL;
	double ns_per_call;
	long iters;
	char *end;

	if (argc == 2 && !strcmp(argv[1], "--help"))
		usage__exit(0);
	if (argc != 3)
		usage__exit(2);
	for (size_t i = 0; i < NWORKLOADS; i++)
		if (!strcmp(argv[1], workloads[i].name))
			w = &workloads[i];
	errno = 0;
	iters = strtol(argv[2], &end, 10);
	if (!w || errno || *end || iters <= 0)
		usage__exit(2);

	ns_per_call = workload__measure(w, iters);
	if (ns_per_call < 0) {
		fprintf(stderr, "syscost: %s: %s\n", w->name, strerror(errno));
		return 1;
	}
	printf("%.1f\n", ns_per_call);
	return 0;
}
