// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * An epoll loop whose slow iterations are shared by several culprits, each a
 * named function with one cause: two that burn CPU (parse_request,
 * render_page), two that block (query_backend reads a pipe a helper thread
 * answers late, backoff_sleep sleeps), one starved of CPU (crunch_numbers:
 * a SCHED_FIFO competitor takes its CPU). Ground truth: every call's own
 * wall time, per iteration, with the iteration's start and end.
 *
 * usage: culprits OUT.json ITERATIONS [--hang] [--go]
 *   --hang: after the iterations, one iteration hangs ~5 s in
 *           deadlock_handler (0.5 s on CPU, then asleep in nanosleep).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>
#include "groundtruth.h"

#define MAX_ITER 512
#define MAX_CALLS 4

enum culprit { PARSE, RENDER, QUERY, BACKOFF, CRUNCH, DEADLOCK, NCULPRITS };

static const char *const names[NCULPRITS] = {
	"parse_request", "render_page", "query_backend", "backoff_sleep", "crunch_numbers",
	"deadlock_handler",
};

struct call {
	enum culprit who;
	unsigned int ms;
};

/* each iteration runs one of these patterns in turn: culprits share iterations */
static const struct call patterns[4][MAX_CALLS] = {
	{ { RENDER, 10 }, { QUERY, 12 }, { PARSE, 5 } },
	{ { PARSE, 5 }, { BACKOFF, 3 }, { RENDER, 14 } },
	{ { QUERY, 12 }, { CRUNCH, 8 } },
	{ { RENDER, 10 }, { BACKOFF, 3 }, { PARSE, 5 } },
};

struct iteration {
	uint64_t start_ns, end_ns;	/* CLOCK_MONOTONIC */
	int ncalls;
	enum culprit who[MAX_CALLS];
	uint64_t call_ns[MAX_CALLS];
};

static struct iteration iters[MAX_ITER + 1];
static int niters;
static int request_pipe[2], reply_pipe[2];
static int competitor_efd;

/* CPU time in the calling function itself: inlined, a clock read every ~20 us */
static inline __attribute__((always_inline)) void burn_ms(unsigned int ms)
{
	uint64_t end = now_ns() + ms * 1000000ull;
	volatile uint64_t x = 0;

	do {
		for (int i = 0; i < 20000; i++)
			x += (uint64_t)i;
	} while (now_ns() < end);
}

__attribute__((noinline)) void parse_request(unsigned int ms)
{
	burn_ms(ms);
}

__attribute__((noinline)) void render_page(unsigned int ms)
{
	burn_ms(ms);
}

/* A request to the backend thread, and a blocking read of its late answer. */
__attribute__((noinline)) void query_backend(unsigned int ms)
{
	char c;

	if (write(request_pipe[1], &ms, sizeof(ms)) != sizeof(ms) ||
	    read(reply_pipe[0], &c, 1) != 1)
		exit(3);
}

__attribute__((noinline)) void backoff_sleep(unsigned int ms)
{
	struct timespec ts = { .tv_nsec = ms * 1000000l };

	nanosleep(&ts, NULL);
}

/* The SCHED_FIFO competitor on our CPU takes it for ms at once; then 1 ms of our work. */
__attribute__((noinline)) void crunch_numbers(unsigned int ms)
{
	uint64_t v = ms;

	pin(0);
	if (write(competitor_efd, &v, sizeof(v)) != sizeof(v))
		exit(3);
	burn_ms(1);
	pin(-1);
}

__attribute__((noinline)) void deadlock_handler(unsigned int ms)
{
	struct timespec ts = { .tv_sec = (ms - 500) / 1000, .tv_nsec = (ms - 500) % 1000 * 1000000l };

	burn_ms(500);
	nanosleep(&ts, NULL);
}

static void (*const fns[NCULPRITS])(unsigned int) = {
	parse_request, render_page, query_backend, backoff_sleep, crunch_numbers,
	deadlock_handler,
};

static void *backend__run(void *arg)
{
	unsigned int ms;

	(void)arg;
	pthread_setname_np(pthread_self(), "backend");
	while (read(request_pipe[0], &ms, sizeof(ms)) == sizeof(ms)) {
		struct timespec ts = { .tv_nsec = ms * 1000000l };

		nanosleep(&ts, NULL);
		if (write(reply_pipe[1], "x", 1) != 1)
			break;
	}
	return NULL;
}

static void *competitor__run(void *arg)
{
	struct sched_param sp = { .sched_priority = 10 };
	uint64_t v;

	(void)arg;
	pthread_setname_np(pthread_self(), "competitor");
	pin(0);
	if (sched_setscheduler(0, SCHED_FIFO, &sp))
		perror("culprits: SCHED_FIFO");
	while (read(competitor_efd, &v, sizeof(v)) == sizeof(v)) {
		uint64_t end = now_ns() + v * 1000000ull;

		while (now_ns() < end)
			;
	}
	return NULL;
}

static void iteration__run(struct iteration *it, const struct call *calls)
{
	for (int c = 0; c < MAX_CALLS && calls[c].ms; c++) {
		uint64_t t0 = now_ns();

		fns[calls[c].who](calls[c].ms);
		it->who[it->ncalls] = calls[c].who;
		it->call_ns[it->ncalls++] = now_ns() - t0;
	}
}

static void truth__write(const char *path, double mono_to_wall)
{
	FILE *f = fopen(path, "w");

	if (!f)
		exit(1);
	fprintf(f, "{\"pid\":%d,\"tid\":%ld,\"mono_to_wall\":%.6f,\"iterations\":[", getpid(),
		syscall(SYS_gettid), mono_to_wall);
	for (int i = 0; i < niters; i++) {
		const struct iteration *it = &iters[i];

		fprintf(f, "%s{\"start_ns\":%llu,\"end_ns\":%llu,\"calls\":[", i ? "," : "",
			(unsigned long long)it->start_ns, (unsigned long long)it->end_ns);
		for (int c = 0; c < it->ncalls; c++)
			fprintf(f, "%s{\"func\":\"%s\",\"ns\":%llu}", c ? "," : "",
				names[it->who[c]], (unsigned long long)it->call_ns[c]);
		fprintf(f, "]}");
	}
	fprintf(f, "]}\n");
	fclose(f);
}

static double mono_to_wall(void)
{
	struct timespec wall;
	uint64_t mono = now_ns();

	clock_gettime(CLOCK_REALTIME, &wall);
	return (double)wall.tv_sec + (double)wall.tv_nsec / 1e9 - (double)mono / 1e9;
}

int main(int argc, char **argv)
{
	struct itimerspec its = { .it_interval.tv_nsec = 60000000, .it_value.tv_nsec = 60000000 };
	struct epoll_event ev = { .events = EPOLLIN }, out[4];
	static const struct call hang[MAX_CALLS] = { { DEADLOCK, 5000 } };
	pthread_t backend, competitor;
	bool go = false, hang_wanted = false;
	uint64_t expirations;
	int n, ep, tfd;

	if (argc < 3) {
		fprintf(stderr, "usage: culprits OUT ITERATIONS [--hang] [--go]\n");
		return 2;
	}
	n = atoi(argv[2]);
	if (n < 0 || n > MAX_ITER)
		return 2;
	for (int i = 3; i < argc; i++) {
		go |= !strcmp(argv[i], "--go");
		hang_wanted |= !strcmp(argv[i], "--hang");
	}
	if (pipe(request_pipe) || pipe(reply_pipe))
		return 1;
	competitor_efd = eventfd(0, 0);
	pthread_create(&backend, NULL, backend__run, NULL);
	pthread_create(&competitor, NULL, competitor__run, NULL);
	/* ahead of ordinary jobs: background load would add run-queue time everywhere */
	setpriority(PRIO_PROCESS, 0, -10);
	printf("%d\n", getpid());
	fflush(stdout);
	if (go) {
		char line[16];

		if (!fgets(line, sizeof(line), stdin))
			return 1;
	}
	ep = epoll_create1(0);
	tfd = timerfd_create(CLOCK_MONOTONIC, 0);
	epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev);
	timerfd_settime(tfd, 0, &its, NULL);
	for (int i = 0; i < n + hang_wanted; i++) {
		struct iteration *it = &iters[niters++];

		epoll_wait(ep, out, 4, -1);
		it->start_ns = now_ns();
		if (read(tfd, &expirations, sizeof(expirations)) < 0)
			return 1;
		iteration__run(it, i < n ? patterns[i % 4] : hang);
		it->end_ns = now_ns();
	}
	/*
	 * Idle a while in the wait: loopwatch reads our code to name the last
	 * stacks, and on a loaded host (we run at nice -10) it may lag behind.
	 */
	memset(&its, 0, sizeof(its));
	timerfd_settime(tfd, 0, &its, NULL);
	epoll_wait(ep, out, 4, 1000);
	truth__write(argv[1], mono_to_wall());
	return 0;
}
