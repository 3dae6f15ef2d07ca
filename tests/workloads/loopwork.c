// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A deterministic epoll loop on a timerfd. Each loop thread injects busy work
 * of known lengths and records, as ground truth, the time from each
 * epoll_wait return to the next epoll_wait call, and around each wait how
 * much a tracer may see beyond that if the thread was preempted or
 * interrupted right at the wait's edges (groundtruth.h, loop__settle_edges).
 *
 * usage: loopwork OUT.json PROFILE[,PROFILE...] ITERATIONS [--spinner] [--waker] [--go]
 *   PROFILE: mixed (mostly sub-ms, a tail to 20 ms) | fixed3 (3 ms each) |
 *            short (0.1-0.4 ms each)
 *   --spinner: one more thread that never calls a wait function
 *   --waker: one more thread that wakes every 0.2 ms: pinned with the loop to one
 *            CPU, it preempts the loop again and again
 *   --go: wait for a line on stdin before starting (lets a tracer attach)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>
#include "groundtruth.h"

struct loop_thread {
	pthread_t thread;
	const char *profile;
	uint32_t seed;
	int iterations;
	int tid;
	uint64_t *busy_ns;
	uint64_t *runq_ns;	/* of busy_ns, waiting for a CPU (its schedstat's run_delay) */
	uint64_t *edge_ns;	/* per wait: before iteration i, and after the last */
	uint64_t *edge_cpu_ns;	/* per wait: the thread's CPU clock from the last read to the next */
	bool *edge_slept;	/* per wait: it went to sleep in it */
	/*
	 * From the first wait call to the return of the last: the time a tracer
	 * that saw every wait watched the loop, busy or waiting (the window of
	 * its arrival-weighted lag).
	 */
	uint64_t span_ns;
};

static volatile bool spinner_stop;

static uint64_t busy_for(const char *profile, uint32_t *seed)
{
	uint32_t r = rng_next(seed) % 1000;

	if (!strcmp(profile, "fixed3"))
		return 3000000;
	if (!strcmp(profile, "short"))
		return 100000 + rng_next(seed) % 300000;
	if (r < 800)
		return 100000 + rng_next(seed) % 400000;	/* 0.1-0.5 ms */
	if (r < 950)
		return 1000000 + rng_next(seed) % 2000000;	/* 1-3 ms */
	if (r < 990)
		return 5000000 + rng_next(seed) % 3000000;	/* 5-8 ms */
	return 15000000 + rng_next(seed) % 5000000;		/* 15-20 ms */
}

/* Wait k's edges as far as the run queue tells: its CPU time is judged once all are known. */
static void loop__edge(struct loop_thread *lt, int k, const struct sched_truth *before,
		       const struct sched_truth *after, uint64_t cpu_ns)
{
	lt->edge_ns[k] = sched_truth__edge_ns(before, after);
	lt->edge_cpu_ns[k] = cpu_ns;
	lt->edge_slept[k] = after->slept != before->slept;
}

static int u64__cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The median CPU time of the waits that slept (slept: true) or did not; 0: none such. */
static uint64_t loop__median_wait_cpu(const struct loop_thread *lt, bool slept, uint64_t *tmp)
{
	int n = 0;

	for (int k = 0; k <= lt->iterations; k++)
		if (lt->edge_slept[k] == slept)
			tmp[n++] = lt->edge_cpu_ns[k];
	if (!n)
		return 0;
	qsort(tmp, (size_t)n, sizeof(*tmp), u64__cmp);
	return tmp[n / 2];
}

/*
 * An interrupt at a wait's edges runs on the thread's CPU clock and between
 * its two wall-clock reads, where a tracer timing the wait call itself may
 * count it: 100 us and more on a loaded host. The clock's reads straddle the
 * whole wait, though, whose own CPU time (entry, a sleep's two context
 * switches, exit) is no tracer's iteration: only what a wait took over the
 * median of its kind, asleep or not, is added to its edge.
 */
static void loop__settle_edges(struct loop_thread *lt)
{
	uint64_t *tmp = calloc((size_t)lt->iterations + 1, sizeof(uint64_t)), median[2];

	if (!tmp) {
		perror("loopwork: edges");
		exit(1);
	}
	median[0] = loop__median_wait_cpu(lt, false, tmp);
	median[1] = loop__median_wait_cpu(lt, true, tmp);
	for (int k = 0; k <= lt->iterations; k++) {
		uint64_t usual = median[lt->edge_slept[k]];

		if (lt->edge_cpu_ns[k] > usual)
			lt->edge_ns[k] += lt->edge_cpu_ns[k] - usual;
	}
	free(tmp);
}

static void *loop__run(void *arg)
{
	struct loop_thread *lt = arg;
	struct itimerspec its = { .it_interval.tv_nsec = 2000000, .it_value.tv_nsec = 2000000 };
	struct epoll_event ev = { .events = EPOLLIN }, out[4];
	int ep, tfd, sfd;
	uint64_t expirations, cpu, cpu_end;
	struct sched_truth before, after;

	lt->tid = (int)syscall(SYS_gettid);
	pthread_setname_np(pthread_self(), lt->profile);
	ep = epoll_create1(0);
	tfd = timerfd_create(CLOCK_MONOTONIC, 0);
	if (ep < 0 || tfd < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev) ||
	    timerfd_settime(tfd, 0, &its, NULL)) {
		perror("loopwork: setup");
		exit(1);
	}
	sfd = sched_truth__open();
	sched_truth__read(sfd, &before);
	cpu_end = thread_cpu_ns();
	lt->span_ns = now_ns();
	for (int i = 0; i < lt->iterations; i++) {
		uint64_t t0, want;

		if (epoll_wait(ep, out, 4, -1) < 0)
			continue;
		t0 = now_ns();
		cpu = thread_cpu_ns();
		sched_truth__read(sfd, &after);
		loop__edge(lt, i, &before, &after, cpu - cpu_end);
		if (read(tfd, &expirations, sizeof(expirations)) < 0)
			perror("loopwork: read");
		want = busy_for(lt->profile, &lt->seed);
		spin_ns(want);
		sched_truth__read(sfd, &before);
		cpu_end = thread_cpu_ns();
		lt->busy_ns[i] = now_ns() - t0;
		lt->runq_ns[i] = before.runq_ns - after.runq_ns;
	}
	/* a last wait closes the last iteration for a tracer */
	epoll_wait(ep, out, 4, 0);
	lt->span_ns = now_ns() - lt->span_ns;
	cpu = thread_cpu_ns();
	sched_truth__read(sfd, &after);
	loop__edge(lt, lt->iterations, &before, &after, cpu - cpu_end);
	loop__settle_edges(lt);
	close(sfd);
	close(tfd);
	close(ep);
	return NULL;
}

static void *spinner__run(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "spinner");
	while (!spinner_stop) {
		struct timespec ts = { .tv_nsec = 1000000 };

		spin_ns(200000);
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static void *waker__run(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "waker");
	while (!spinner_stop) {
		struct timespec ts = { .tv_nsec = 200000 };

		spin_ns(20000);
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static void truth__write(const char *path, struct loop_thread *lts, int n)
{
	FILE *f = fopen(path, "w");

	if (!f) {
		perror("loopwork: output");
		exit(1);
	}
	fprintf(f, "{\"pid\":%d,\"threads\":[", getpid());
	for (int t = 0; t < n; t++) {
		fprintf(f, "%s{\"tid\":%d,\"profile\":\"%s\",\"span_ns\":%llu,\"busy_ns\":[",
			t ? "," : "", lts[t].tid, lts[t].profile,
			(unsigned long long)lts[t].span_ns);
		for (int i = 0; i < lts[t].iterations; i++)
			fprintf(f, "%s%llu", i ? "," : "", (unsigned long long)lts[t].busy_ns[i]);
		fprintf(f, "],\"runq_ns\":[");
		for (int i = 0; i < lts[t].iterations; i++)
			fprintf(f, "%s%llu", i ? "," : "", (unsigned long long)lts[t].runq_ns[i]);
		fprintf(f, "],\"edge_ns\":[");
		for (int i = 0; i <= lts[t].iterations; i++)
			fprintf(f, "%s%llu", i ? "," : "", (unsigned long long)lts[t].edge_ns[i]);
		fprintf(f, "]}");
	}
	fprintf(f, "]}\n");
	fclose(f);
}

int main(int argc, char **argv)
{
	struct loop_thread lts[8];
	pthread_t spinner, waker;
	bool with_spinner = false, with_waker = false, go = false;
	char *profiles, *p;
	int n = 0, iterations;

	if (argc < 4) {
		fprintf(stderr, "usage: loopwork OUT PROFILES ITERATIONS [--spinner] [--waker] "
			"[--go]\n");
		return 2;
	}
	iterations = atoi(argv[3]);
	for (int i = 4; i < argc; i++) {
		with_spinner |= !strcmp(argv[i], "--spinner");
		with_waker |= !strcmp(argv[i], "--waker");
		go |= !strcmp(argv[i], "--go");
	}
	printf("%d\n", getpid());
	fflush(stdout);
	if (go) {
		char line[16];

		if (!fgets(line, sizeof(line), stdin))
			return 1;
	}
	profiles = strdup(argv[2]);
	for (p = strtok(profiles, ","); p && n < 8; p = strtok(NULL, ","), n++) {
		lts[n] = (struct loop_thread){ .profile = p, .seed = 2463534242u + (uint32_t)n,
					       .iterations = iterations };
		lts[n].busy_ns = calloc((size_t)iterations, sizeof(uint64_t));
		lts[n].runq_ns = calloc((size_t)iterations, sizeof(uint64_t));
		lts[n].edge_ns = calloc((size_t)iterations + 1, sizeof(uint64_t));
		lts[n].edge_cpu_ns = calloc((size_t)iterations + 1, sizeof(uint64_t));
		lts[n].edge_slept = calloc((size_t)iterations + 1, sizeof(bool));
	}
	if (with_spinner)
		pthread_create(&spinner, NULL, spinner__run, NULL);
	if (with_waker)
		pthread_create(&waker, NULL, waker__run, NULL);
	for (int t = 0; t < n; t++)
		pthread_create(&lts[t].thread, NULL, loop__run, &lts[t]);
	for (int t = 0; t < n; t++)
		pthread_join(lts[t].thread, NULL);
	spinner_stop = true;
	if (with_spinner)
		pthread_join(spinner, NULL);
	if (with_waker)
		pthread_join(waker, NULL);
	truth__write(argv[1], lts, n);
	return 0;
}
