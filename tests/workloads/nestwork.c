// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A loop whose handler waits itself, from deeper in the stack: every eighth
 * iteration handle_request() -> await_reply() waits ~20 ms for a helper
 * thread's answer in a nested wait call. Records, as ground truth, every
 * iteration's busy time (home wait return -> next home wait call) and each
 * nested call's duration.
 *
 * usage: nestwork OUT.json MODE ITERATIONS [--go]
 *   MODE: ppoll (a glib-style ppoll home loop on a timerfd and an eventfd; the
 *         nested wait is a poll on a pipe) | epoll (an epoll home loop; the
 *         nested wait is an epoll_wait on a second epoll fd)
 *   --go: wait for a line on stdin before starting (lets a tracer attach)
 *
 * The loop thread runs SCHED_FIFO: on a loaded host a CFS thread is often
 * preempted right after a wait call returns, where the workload's clock and
 * the kernel's tracepoints see different iterations. This workload is about
 * which waits end an iteration, not about CPU starvation.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>
#include "groundtruth.h"

/*
 * One iteration in 8 makes a request: 12.5 % of them, so p90 and p99 fall among
 * the ~20 ms requests and p50 among the short ones. At 10 % p90 would be the
 * largest short iteration, which one stray interrupt decides.
 */
#define REQUEST_EVERY 8
#define REPLY_NS 20000000ULL

struct record {
	uint64_t busy_ns;
	uint64_t call_ns;	/* 0: no nested wait in this iteration */
};

static struct {
	bool epoll;
	int ask_efd;		/* loop -> helper: answer in REPLY_NS */
	int reply_rd, reply_wr;	/* helper -> loop (ppoll mode) */
	int reply_efd;		/* helper -> loop (epoll mode) */
	int nested_ep;		/* the second epoll fd (epoll mode) */
} w;

static void *helper__run(void *arg)
{
	struct timespec ts = { .tv_nsec = REPLY_NS };
	uint64_t n, one = 1;

	(void)arg;
	for (;;) {
		if (read(w.ask_efd, &n, sizeof(n)) != sizeof(n))
			return NULL;
		nanosleep(&ts, NULL);
		if (w.epoll) {
			if (write(w.reply_efd, &one, sizeof(one)) != sizeof(one))
				exit(3);
		} else if (write(w.reply_wr, "r", 1) != 1) {
			exit(3);
		}
	}
}

/*
 * The nested wait, two calls below the loop: what a handler's blocking client
 * does. Returns the wait call's own duration.
 */
__attribute__((noinline)) uint64_t await_reply(void)
{
	uint64_t t0, t1, n;
	int ready;
	char c;

	if (w.epoll) {
		struct epoll_event ev;

		t0 = now_ns();
		ready = epoll_wait(w.nested_ep, &ev, 1, 1000);
		t1 = now_ns();
		if (ready != 1 || read(w.reply_efd, &n, sizeof(n)) != sizeof(n))
			exit(4);
	} else {
		struct pollfd pfd = { .fd = w.reply_rd, .events = POLLIN };

		t0 = now_ns();
		ready = poll(&pfd, 1, 1000);
		t1 = now_ns();
		if (ready != 1 || read(w.reply_rd, &c, 1) != 1)
			exit(4);
	}
	return t1 - t0;
}

__attribute__((noinline)) uint64_t handle_request(void)
{
	uint64_t one = 1;

	if (write(w.ask_efd, &one, sizeof(one)) != sizeof(one))
		exit(4);
	return await_reply();
}

static int setup(int *tfd, int *efd)
{
	struct itimerspec its = { .it_interval.tv_nsec = 2000000, .it_value.tv_nsec = 2000000 };
	int pipefd[2];

	*tfd = timerfd_create(CLOCK_MONOTONIC, 0);
	*efd = eventfd(0, 0);
	w.ask_efd = eventfd(0, 0);
	if (*tfd < 0 || *efd < 0 || w.ask_efd < 0 || timerfd_settime(*tfd, 0, &its, NULL))
		return -1;
	if (w.epoll) {
		struct epoll_event ev = { .events = EPOLLIN };

		w.reply_efd = eventfd(0, 0);
		w.nested_ep = epoll_create1(0);
		return w.reply_efd < 0 || w.nested_ep < 0 ||
		       epoll_ctl(w.nested_ep, EPOLL_CTL_ADD, w.reply_efd, &ev) ? -1 : 0;
	}
	if (pipe(pipefd))
		return -1;
	w.reply_rd = pipefd[0];
	w.reply_wr = pipefd[1];
	return 0;
}

/* One iteration's work after the home wait returned; i picks a request or small work. */
static void iteration__work(int tfd, int i, struct record *r)
{
	uint64_t expirations;
	uint32_t seed = 2463534242u + (uint32_t)i;

	if (read(tfd, &expirations, sizeof(expirations)) < 0)
		exit(5);
	if (i % REQUEST_EVERY == REQUEST_EVERY - 1)
		r->call_ns = handle_request();
	else
		spin_ns(100000 + rng_next(&seed) % 400000);
}

static void loop__epoll(int tfd, int efd, struct record *recs, int n)
{
	struct epoll_event ev = { .events = EPOLLIN }, out[4];
	int ep = epoll_create1(0);

	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev) ||
	    epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev))
		exit(5);
	for (int i = 0; i < n; i++) {
		uint64_t t0;

		if (epoll_wait(ep, out, 4, -1) < 0)
			exit(5);
		t0 = now_ns();
		iteration__work(tfd, i, &recs[i]);
		recs[i].busy_ns = now_ns() - t0;
	}
	/* a last wait closes the last iteration for a tracer */
	epoll_wait(ep, out, 4, 0);
}

/* glib's shape: one pollfd array, the timeout as a timespec, a signal mask */
static void loop__ppoll(int tfd, int efd, struct record *recs, int n)
{
	struct pollfd fds[2] = { { .fd = tfd, .events = POLLIN }, { .fd = efd, .events = POLLIN } };
	struct timespec timeout = { .tv_sec = 1 }, zero = { 0 };
	sigset_t mask;

	sigemptyset(&mask);
	for (int i = 0; i < n; i++) {
		uint64_t t0;

		if (ppoll(fds, 2, &timeout, &mask) < 0)
			exit(5);
		t0 = now_ns();
		iteration__work(tfd, i, &recs[i]);
		recs[i].busy_ns = now_ns() - t0;
	}
	ppoll(fds, 2, &zero, &mask);
}

static void truth__write(const char *path, const char *mode, int tid, struct record *recs,
			 int n)
{
	FILE *f = fopen(path, "w");

	if (!f) {
		perror("nestwork: output");
		exit(1);
	}
	fprintf(f, "{\"pid\":%d,\"tid\":%d,\"mode\":\"%s\",\"records\":[", getpid(), tid, mode);
	for (int i = 0; i < n; i++)
		fprintf(f, "%s{\"busy_ns\":%llu,\"call_ns\":%llu}", i ? "," : "",
			(unsigned long long)recs[i].busy_ns, (unsigned long long)recs[i].call_ns);
	fprintf(f, "],\"fds\":{\"nested_ep\":%d,\"reply_rd\":%d}}\n", w.nested_ep, w.reply_rd);
	fclose(f);
}

int main(int argc, char **argv)
{
	struct record *recs;
	pthread_t helper;
	int n, tfd, efd;
	char line[16];

	if (argc < 4 || (strcmp(argv[2], "ppoll") && strcmp(argv[2], "epoll"))) {
		fprintf(stderr, "usage: nestwork OUT ppoll|epoll ITERATIONS [--go]\n");
		return 2;
	}
	w.epoll = !strcmp(argv[2], "epoll");
	n = atoi(argv[3]);
	recs = calloc((size_t)n, sizeof(*recs));
	if (!recs || setup(&tfd, &efd)) {
		perror("nestwork: setup");
		return 1;
	}
	printf("%d\n", getpid());
	fflush(stdout);
	if (argc > 4 && !strcmp(argv[4], "--go") && !fgets(line, sizeof(line), stdin))
		return 1;
	/* the helper stays a normal thread: created before the loop thread turns FIFO */
	if (pthread_create(&helper, NULL, helper__run, NULL) ||
	    sched_setscheduler(0, SCHED_FIFO, &(struct sched_param){ .sched_priority = 1 })) {
		perror("nestwork: helper, SCHED_FIFO");
		return 1;
	}
	if (w.epoll)
		loop__epoll(tfd, efd, recs, n);
	else
		loop__ppoll(tfd, efd, recs, n);
	truth__write(argv[1], argv[2], (int)syscall(SYS_gettid), recs, n);
	return 0;
}
