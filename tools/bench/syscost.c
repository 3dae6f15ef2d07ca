// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * syscost: time one tight loop (of syscalls, thread round trips, CPU work or
 * calls of a probed function) and print its cost in ns per call.
 * Usage: syscost WORKLOAD ITERATIONS
 *
 * The calls are timed in batches (a workload's batch_calls), each short next
 * to a scheduler time slice, and the median batch is printed: on a busy 2-core
 * machine a batch that got preempted or lost its vCPU is an outlier the
 * median drops, where one clock around all the calls would charge it in full.
 *
 * A workload is a setup (e.g. the first wait call that makes the thread a
 * loop thread) and a loop body; add one by adding a row to workloads[]. A
 * "call" is whatever one pass of the body does: a syscall, a round trip
 * between two threads, a unit of CPU work, a call of a probed function.
 */
#define _GNU_SOURCE	/* SCHED_BATCH */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/eventfd.h>

#define BATCH_CALLS 10000
/* ~4 cycles a round: a unit of CPU work of ~1 us, a probed call of ~300 ns */
#define WORK_UNIT_ROUNDS 1000
#define WORK_UNIT_NOMINAL_NS 1000.0
#define BUSY_UNITS 5000
#define IRQ_MIN_NS 500		/* above a unit's jitter */
#define IRQ_MAX_NS 100000	/* a sample with its program takes ~15 us here */
#define PROBE_TARGET_ROUNDS 300

struct workload {
	const char *name;
	const char *doc;
	/* returns what calls needs (an fd), or -1 with errno set */
	int (*setup)(void);
	void (*calls)(int fd, long n);
	long batch_calls;	/* timed together: short next to a time slice */
	/* instead of timing batches of calls: returns ns per call, or -1 */
	double (*measure)(int fd, long iters);
};

static volatile uint64_t work_sink;

static long long clock__ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int ns__cmp(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return (x > y) - (x < y);
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

/* A partner thread answers every kick on to_partner with one on to_loop. */
static struct {
	int to_partner;
	int to_loop;
} pingpong;

static void eventfd__kick(int fd)
{
	uint64_t one = 1;

	if (write(fd, &one, sizeof(one)) != sizeof(one))
		abort();	/* a lost kick would hang both threads */
}

static void eventfd__take(int fd)
{
	uint64_t count;

	if (read(fd, &count, sizeof(count)) != sizeof(count))
		abort();
}

static void *partner__run(void *arg)
{
	(void)arg;
	for (;;) {
		eventfd__take(pingpong.to_partner);
		eventfd__kick(pingpong.to_loop);
	}
	return NULL;
}

/*
 * Both threads inherit the process's CPU mask: pinned to one CPU, every
 * round trip is two context switches and two wakeups, and nothing else.
 * SCHED_BATCH (inherited by the partner) keeps a woken thread from
 * preempting the waker: each thread leaves the CPU by going to sleep where
 * the workload says, never in the middle of its turn.
 */
static int pingpong__setup(void)
{
	struct sched_param param = { .sched_priority = 0 };
	pthread_t partner;
	int err;

	if (sched_setscheduler(0, SCHED_BATCH, &param))
		return -1;
	pingpong.to_partner = eventfd(0, EFD_CLOEXEC);
	pingpong.to_loop = eventfd(0, EFD_CLOEXEC);
	if (pingpong.to_partner < 0 || pingpong.to_loop < 0)
		return -1;
	err = pthread_create(&partner, NULL, partner__run, NULL);
	if (err) {
		errno = err;
		return -1;
	}
	pthread_detach(partner);
	return pingpong.to_loop;
}

/* the measured thread waits for the answer in epoll_wait: a loop thread */
static int loop_pingpong__setup(void)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int epfd;

	if (pingpong__setup() < 0)
		return -1;
	epfd = loop__setup();
	if (epfd < 0 || epoll_ctl(epfd, EPOLL_CTL_ADD, pingpong.to_loop, &ev))
		return -1;
	return epfd;
}

static void pingpong__calls(int fd, long n)
{
	for (long i = 0; i < n; i++) {
		eventfd__kick(pingpong.to_partner);
		eventfd__take(fd);
	}
}

/* an idle loop: it sleeps in the wait call, so each round trip is an iteration */
static void loop_pingpong__calls(int epfd, long n)
{
	struct epoll_event ev;

	for (long i = 0; i < n; i++) {
		eventfd__kick(pingpong.to_partner);
		epoll_wait(epfd, &ev, 1, -1);
		eventfd__take(pingpong.to_loop);
	}
}

/* a loop that blocks inside its iteration: the answer is read with a blocking read() */
static void loop_pingpong_block__calls(int epfd, long n)
{
	struct epoll_event ev;

	for (long i = 0; i < n; i++) {
		epoll_wait(epfd, &ev, 1, 0);
		eventfd__kick(pingpong.to_partner);
		eventfd__take(pingpong.to_loop);
	}
}

/*
 * Wait calls the home/nested decision sees: the loop's own wait, a wait made
 * from a handler one call deeper (on a pipe, or on a second epoll fd), a
 * glib-style ppoll loop, and a poll on one connected socket by a thread that
 * is no loop (a socket timeout). All with a zero timeout: the decision's cost,
 * not a sleep. The fds live here; setup returns the home epoll fd.
 */
static struct {
	int pipe_rd;
	int nested_ep;
	int sock;
} waits;

static int waits__setup(void)
{
	int pipefd[2], sv[2];

	if (pipe(pipefd) || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return -1;
	waits.pipe_rd = pipefd[0];
	waits.sock = sv[0];
	waits.nested_ep = epoll_create1(EPOLL_CLOEXEC);
	return waits.nested_ep;
}

/* an epoll loop thread, with the fds its handler waits on */
static int nested__setup(void)
{
	return waits__setup() < 0 ? -1 : loop__setup();
}

static __attribute__((noipa)) void handler__poll(void)
{
	struct pollfd pfd = { .fd = waits.pipe_rd, .events = POLLIN };

	poll(&pfd, 1, 0);
}

static __attribute__((noipa)) void handler__epoll(void)
{
	struct epoll_event ev;

	epoll_wait(waits.nested_ep, &ev, 1, 0);
}

/* one iteration: the home wait, then a nested poll from the handler */
static void nested_poll__calls(int epfd, long n)
{
	struct epoll_event ev;

	for (long i = 0; i < n; i++) {
		epoll_wait(epfd, &ev, 1, 0);
		handler__poll();
	}
}

static void nested_epoll__calls(int epfd, long n)
{
	struct epoll_event ev;

	for (long i = 0; i < n; i++) {
		epoll_wait(epfd, &ev, 1, 0);
		handler__epoll();
	}
}

/* no epoll wait first: the ppoll is the thread's home */
static int ppoll__setup(void)
{
	return waits__setup() < 0 ? -1 : waits.pipe_rd;
}

static void ppoll__calls(int fd, long n)
{
	struct pollfd pfds[2] = { { .fd = fd, .events = POLLIN },
				  { .fd = waits.sock, .events = POLLIN } };
	struct timespec zero = { 0 };

	for (long i = 0; i < n; i++)
		ppoll(pfds, 2, &zero, NULL);
}

/* never a loop thread: its only waits are call-style */
static int client__setup(void)
{
	return waits__setup() < 0 ? -1 : waits.sock;
}

static void client_poll__calls(int sock, long n)
{
	struct pollfd pfd = { .fd = sock, .events = POLLIN };

	for (long i = 0; i < n; i++)
		poll(&pfd, 1, 0);
}

/* A chain of dependent multiply-adds: a fixed instruction count nothing folds. */
static uint64_t work__spin(uint64_t x, int rounds)
{
	for (int i = 0; i < rounds; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		__asm__ volatile("" : "+r"(x));
	}
	return x;
}

static __attribute__((noipa)) uint64_t work__unit(uint64_t x)
{
	return work__spin(x, WORK_UNIT_ROUNDS);
}

/*
 * CPU work on a loop thread, in busy periods of BUSY_UNITS units (~5 ms,
 * under the 10 ms stall threshold, so every CPU sample in one takes
 * loopwatch's stack capture). Each unit is timed on its own: a period's
 * median unit is the work undisturbed, and what a unit takes beyond it, from
 * IRQ_MIN_NS to IRQ_MAX_NS, is an interrupt (the tick, a CPU sample and its
 * program). Longer gaps are the vCPU or the thread being away -- this VM's
 * host takes a vCPU away for milliseconds at a time, more often the busier
 * the other one is -- and would swamp a plain ns-per-unit: they are left out. Returns the ns that
 * WORK_UNIT_NOMINAL_NS of undisturbed work takes, counting interrupts.
 */
static double loop_busy__measure(int epfd, long iters)
{
	long nperiods = (iters + BUSY_UNITS - 1) / BUSY_UNITS;
	long long *unit_ns = calloc(BUSY_UNITS, sizeof(*unit_ns));
	long long *sorted_ns = calloc(BUSY_UNITS, sizeof(*sorted_ns));
	long long prev, now, median_ns, extra_ns;
	double work_ns = 0, irq_ns = 0;
	struct epoll_event ev;
	uint64_t x = (uint64_t)iters;

	if (!unit_ns || !sorted_ns) {
		free(unit_ns);
		free(sorted_ns);
		return -1;
	}
	for (long i = 0; i < iters / 10; i++)
		x = work__unit(x);
	for (long p = 0; p < nperiods; p++) {
		epoll_wait(epfd, &ev, 1, 0);	/* a new busy period starts */
		prev = clock__ns();
		for (long i = 0; i < BUSY_UNITS; i++) {
			x = work__unit(x);
			now = clock__ns();
			unit_ns[i] = now - prev;
			prev = now;
		}
		memcpy(sorted_ns, unit_ns, BUSY_UNITS * sizeof(*unit_ns));
		qsort(sorted_ns, BUSY_UNITS, sizeof(*sorted_ns), ns__cmp);
		median_ns = sorted_ns[BUSY_UNITS / 2];
		work_ns += (double)median_ns * BUSY_UNITS;
		for (long i = 0; i < BUSY_UNITS; i++) {
			extra_ns = unit_ns[i] - median_ns;
			if (extra_ns >= IRQ_MIN_NS && extra_ns <= IRQ_MAX_NS)
				irq_ns += (double)extra_ns;
		}
	}
	work_sink = x;
	free(unit_ns);
	free(sorted_ns);
	return WORK_UNIT_NOMINAL_NS * (1 + irq_ns / work_ns);
}

/* iterations of ~20 us of CPU work: under any sampling gate, never a stall */
static void loop_busy20__calls(int epfd, long n)
{
	struct epoll_event ev;
	uint64_t x = (uint64_t)n;

	for (long i = 0; i < n; i++) {
		epoll_wait(epfd, &ev, 1, 0);
		for (int u = 0; u < 20; u++)
			x = work__unit(x);
	}
	work_sink = x;
}

/*
 * run.sh puts uprobes on these two by name: keep them global, out of line
 * and unique. What a uprobe hit costs depends on the probed instruction: on
 * x86-64 the kernel emulates a push (most functions start by saving a
 * register) but must single-step most others out of line, a second trap.
 * The clobber makes gcc save rbx first thing; the other starts with a mov.
 */
__attribute__((noipa)) uint64_t bench_probe_target(uint64_t x);
__attribute__((noipa)) uint64_t bench_probe_target_sstep(uint64_t x);

__attribute__((noipa)) uint64_t bench_probe_target(uint64_t x)
{
	__asm__ volatile("" ::: "rbx");
	return work__spin(x, PROBE_TARGET_ROUNDS);
}

__attribute__((noipa)) uint64_t bench_probe_target_sstep(uint64_t x)
{
	return work__spin(x, PROBE_TARGET_ROUNDS);
}

static void probe__calls(int fd, long n)
{
	uint64_t x = (uint64_t)fd;

	for (long i = 0; i < n; i++)
		x = bench_probe_target(x);
	work_sink = x;
}

static void probe_sstep__calls(int fd, long n)
{
	uint64_t x = (uint64_t)fd;

	for (long i = 0; i < n; i++)
		x = bench_probe_target_sstep(x);
	work_sink = x;
}

static const struct workload workloads[] = {
	{ .name = "getppid",
	  .doc = "getppid() on a thread that never waits",
	  .setup = none__setup, .calls = getppid__calls, .batch_calls = BATCH_CALLS },
	{ .name = "epoll0",
	  .doc = "epoll_wait(epfd, .., 0) on a loop thread: one iteration per call",
	  .setup = loop__setup, .calls = epoll_wait__calls, .batch_calls = BATCH_CALLS },
	{ .name = "nested-poll0",
	  .doc = "epoll_wait(home, .., 0), then poll(pipe, 1, 0) from a handler: a nested wait",
	  .setup = nested__setup, .calls = nested_poll__calls, .batch_calls = BATCH_CALLS },
	{ .name = "nested-epoll0",
	  .doc = "epoll_wait(home, .., 0), then epoll_wait on a second epoll fd from a handler",
	  .setup = nested__setup, .calls = nested_epoll__calls, .batch_calls = BATCH_CALLS },
	{ .name = "ppoll0",
	  .doc = "ppoll(2 fds, 0) on a ppoll loop thread (glib's shape): one iteration each",
	  .setup = ppoll__setup, .calls = ppoll__calls, .batch_calls = BATCH_CALLS },
	{ .name = "client-poll0",
	  .doc = "poll(connected socket, 1, 0) on a thread that never becomes a loop thread",
	  .setup = client__setup, .calls = client_poll__calls, .batch_calls = BATCH_CALLS },
	{ .name = "loop-getppid",
	  .doc = "getppid() on a thread that is a loop thread",
	  .setup = loop__setup, .calls = getppid__calls, .batch_calls = BATCH_CALLS },
	{ .name = "pingpong",
	  .doc = "eventfd round trip to a partner thread, neither a loop thread",
	  .setup = pingpong__setup, .calls = pingpong__calls, .batch_calls = 200 },
	{ .name = "loop-pingpong",
	  .doc = "the same, answer awaited in epoll_wait: one loop iteration each",
	  .setup = loop_pingpong__setup, .calls = loop_pingpong__calls, .batch_calls = 200 },
	{ .name = "loop-pingpong-block",
	  .doc = "the same, answer read() blocking inside the iteration",
	  .setup = loop_pingpong__setup, .calls = loop_pingpong_block__calls,
	  .batch_calls = 200 },
	{ .name = "loop-busy",
	  .doc = "ns that 1000 ns of CPU work takes with interrupts, on a busy loop thread",
	  .setup = loop__setup, .measure = loop_busy__measure, .batch_calls = BUSY_UNITS },
	{ .name = "loop-busy20",
	  .doc = "a loop iteration of ~20 us of CPU work (what a CPU sample of it costs)",
	  .setup = loop__setup, .calls = loop_busy20__calls, .batch_calls = 1000 },
	{ .name = "probe",
	  .doc = "a call of bench_probe_target() (~300 ns of work) on a loop thread",
	  .setup = loop__setup, .calls = probe__calls, .batch_calls = 200 },
	{ .name = "probe-sstep",
	  .doc = "the same, bench_probe_target_sstep(): entered by a mov, not a push",
	  .setup = loop__setup, .calls = probe_sstep__calls, .batch_calls = 200 },
};

#define NWORKLOADS (sizeof(workloads) / sizeof(workloads[0]))

/* median ns per call over the batches, or -1 with errno set */
static double workload__measure(const struct workload *w, long iters)
{
	long batch_calls = w->batch_calls;
	long nbatches = (iters + batch_calls - 1) / batch_calls;
	long long *batch_ns, start;
	double median_ns;
	int fd;

	fd = w->setup();
	if (fd < 0)
		return -1;
	if (w->measure)
		return w->measure(fd, iters);
	batch_ns = calloc(nbatches, sizeof(*batch_ns));
	if (!batch_ns)
		return -1;
	/* page faults, caches and the tracer's first-sight work stay out */
	w->calls(fd, iters / 10);
	for (long b = 0; b < nbatches; b++) {
		start = clock__ns();
		w->calls(fd, batch_calls);
		batch_ns[b] = clock__ns() - start;
	}
	qsort(batch_ns, nbatches, sizeof(*batch_ns), ns__cmp);
	median_ns = (double)batch_ns[nbatches / 2] / batch_calls;
	free(batch_ns);
	return median_ns;
}

static void usage__exit(int status)
{
	FILE *f = status ? stderr : stdout;

	fprintf(f, "Usage: syscost WORKLOAD ITERATIONS\n"
		"Prints the median ns per call over batches of calls. Workloads:\n");
	for (size_t i = 0; i < NWORKLOADS; i++)
		fprintf(f, "  %-20s %s (batches of %ld)\n", workloads[i].name, workloads[i].doc,
			workloads[i].batch_calls);
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
