/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Helpers the test workloads share: clocks, spinning, ground-truth output. */
#ifndef LOOPWATCH_GROUNDTRUTH_H
#define LOOPWATCH_GROUNDTRUTH_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#ifndef RUSAGE_THREAD
#define RUSAGE_THREAD 1	/* Linux's, declared only under _GNU_SOURCE */
#endif

/*
 * The clock and the spin are inlined into their callers even under -fno-inline:
 * with every frame unwound, a CPU stall's culprit is the workload's function that
 * spins, not these helpers.
 */
static inline __attribute__((always_inline)) uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Burn CPU for ns nanoseconds of wall time. */
static inline __attribute__((always_inline)) void spin_ns(uint64_t ns)
{
	uint64_t end = now_ns() + ns;

	while (now_ns() < end)
		;
}

#ifdef _GNU_SOURCE
#include <sched.h>

/*
 * Run on cpu only; -1: on any CPU again. Inlined like the clock: its wait to
 * move (behind other tasks on a loaded host, milliseconds) is its caller's
 * own time, as the caller's clock counts it.
 */
static inline __attribute__((always_inline)) void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	for (int i = 0; i < CPU_SETSIZE; i++) {
		if (cpu < 0 || i == cpu)
			CPU_SET(i, &set);
	}
	sched_setaffinity(0, sizeof(set), &set);
}
#endif

/* CLOCK_REALTIME seconds: when an iteration began, as loopwatch's JSON dates a stall. */
static inline double wall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Our pid on stdout; with wait, a line on stdin before going on (the tracer attaches). */
static inline int go__await(int wait)
{
	char line[16];

	printf("%d\n", getpid());
	fflush(stdout);
	return wait && !fgets(line, sizeof(line), stdin) ? -1 : 0;
}

/* An epoll fd over a timerfd (*tfd) that fires every interval_ns: an iteration a tick. */
static inline int ticker__open(long interval_ns, int *tfd)
{
	struct itimerspec its = { .it_interval.tv_nsec = interval_ns,
				  .it_value.tv_nsec = interval_ns };
	struct epoll_event ev = { .events = EPOLLIN };
	int ep = epoll_create1(0);

	*tfd = timerfd_create(CLOCK_MONOTONIC, 0);
	epoll_ctl(ep, EPOLL_CTL_ADD, *tfd, &ev);
	timerfd_settime(*tfd, 0, &its, NULL);
	return ep;
}

/* Wait for the next tick: an iteration begins. Its start, monotonic ns and wall seconds. */
static inline uint64_t ticker__next(int ep, int tfd, double *start_wall)
{
	struct epoll_event out[4];
	uint64_t expirations, t0;

	epoll_wait(ep, out, 4, -1);
	t0 = now_ns();
	*start_wall = wall_now();
	if (read(tfd, &expirations, sizeof(expirations)) < 0)
		return 0;
	return t0;
}

/* One iteration as the workload saw it: what it did, when it began, how long it was busy. */
struct iter_record {
	const char *label;
	double start_wall;
	uint64_t busy_ns;
};

/* {"pid":..,"tid":..<extra>,"records":[{"<key>":label,"start":..,"busy_ns":..},..]} */
static inline int iter_records__write(const char *path, const char *key, const char *extra,
				      const struct iter_record *v, int n)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fprintf(f, "{\"pid\":%d,\"tid\":%ld%s,\"records\":[", getpid(), syscall(SYS_gettid),
		extra);
	for (int i = 0; i < n; i++)
		fprintf(f, "%s{\"%s\":\"%s\",\"start\":%.6f,\"busy_ns\":%llu}", i ? "," : "",
			key, v[i].label, v[i].start_wall, (unsigned long long)v[i].busy_ns);
	fprintf(f, "]}\n");
	return fclose(f);
}

/*
 * What the scheduler did to the calling thread, as the thread measures it
 * itself: on-CPU time from its CPU clock (exact: the kernel brings the
 * running task's sum up to date for it, which /proc's schedstat does not),
 * run-queue time from /proc/thread-self/schedstat's run_delay (exact for
 * every wait for a CPU that has ended), and its involuntary context switches
 * (getrusage), which say whether it was preempted at all.
 */
struct sched_truth {
	uint64_t oncpu_ns;
	uint64_t runq_ns;
	uint64_t preempted;
	uint64_t slept;		/* voluntary context switches: it went to sleep */
};

/* The calling thread's own schedstat, opened once per thread. */
static inline int sched_truth__open(void)
{
	return open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
}

static inline void sched_truth__read(int fd, struct sched_truth *t)
{
	unsigned long long exec_ns = 0, run_delay_ns = 0;
	struct timespec ts;
	struct rusage ru;
	char buf[96];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	buf[n > 0 ? n : 0] = '\0';
	if (sscanf(buf, "%llu %llu", &exec_ns, &run_delay_ns) != 2)
		run_delay_ns = 0;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	getrusage(RUSAGE_THREAD, &ru);
	t->oncpu_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	t->runq_ns = run_delay_ns;
	t->preempted = (uint64_t)ru.ru_nivcsw;
	t->slept = (uint64_t)ru.ru_nvcsw;
}

/*
 * Time a tracer may count as busy that the thread could not time itself: the
 * moments between a wait call's return and the thread's first clock read, or
 * its last clock read and the next wait call. On hardware only a preemption
 * makes them more than a microsecond; when the thread was preempted across
 * the wait (before: read just before the wait call, after: just after its
 * return), they are at most the run-queue time of that window. (Time on CPU
 * there is thread_cpu_ns's.)
 */
static inline uint64_t sched_truth__edge_ns(const struct sched_truth *before,
					    const struct sched_truth *after)
{
	if (after->preempted == before->preempted)
		return 0;
	return after->runq_ns - before->runq_ns;
}

/*
 * The calling thread's CPU clock. Read just before an iteration's last clock
 * read and just after the next one's first, it bounds the rest of those
 * moments: the thread ran there, in the wait call's entry and exit paths. A
 * microsecond on hardware; under TCG, milliseconds: code the thread runs for
 * the first time is translated first (a new process's libc and vDSO after
 * its first wait, a tracer's programs), and a host that takes the vCPU away
 * leaves the guest's clocks running, charged to the thread on it.
 */
static inline uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Deterministic xorshift: the same seed gives the same stall pattern. */
static inline uint32_t rng_next(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

#endif
