// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * An epoll loop that injects one kind of stall per iteration, each in its own
 * named function, and records ground truth: every iteration's busy time, the
 * duration of the injected call, and what the scheduler did to the thread
 * meanwhile as the thread measured it itself (on-CPU and run-queue time, and
 * the edges of its waits: groundtruth.h), and whether its own breakdown was
 * mostly its kind ("clean": a loaded host may starve a CPU spin).
 *
 * usage: stallwork OUT.json KIND[,KIND...] REPEAT [--go]
 *   KIND: cpu (spin ~25 ms) | sleep (nanosleep ~30 ms) | fsync (write+fsync)
 *         | mutex (wait ~20 ms on a mutex another thread holds)
 *         | runq (a SCHED_FIFO competitor on the same CPU takes ~25 ms)
 *         | small (2 ms of work: no stall)
 *         | named (a 25 ms spin in a function with a long name to patch)
 *         | hung (3 s: 2.4 s of spinning that the competitor takes half of, in
 *           20 ms bursts, then 0.6 s asleep: a hung loop whose time is split
 *           between all three parts)
 * Each kind runs REPEAT times, separated by quiet iterations.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>
#include "groundtruth.h"

#define MAX_RECORDS 4096

struct record {
	const char *kind;
	uint64_t start_ns;	/* CLOCK_MONOTONIC, as it began */
	uint64_t busy_ns;
	uint64_t call_ns;
	uint64_t call_runq_ns;	/* of call_ns, waiting for a CPU */
	uint64_t oncpu_ns;	/* of busy_ns, on a CPU */
	uint64_t runq_ns;	/* of busy_ns, waiting for a CPU */
	uint64_t edge_ns;	/* the wait before it: what a tracer may see beyond busy_ns */
	uint64_t edge_cpu_ns;	/* of edge_ns, on a CPU (the rest: waiting for one) */
	uint64_t sleeps;	/* times it went to sleep: none, and it was never blocked */
	bool clean;		/* its kind's share of busy_ns was what the kind injects */
};

static int sched_fd;

static struct record records[MAX_RECORDS];
static int nrecords;
static char fsync_path[256];

static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static atomic_int holder_has_lock;
static int holder_efd;
static int competitor_efd;

__attribute__((noinline)) void inject_cpu_spin(struct record *r)
{
	uint64_t t0 = now_ns();

	spin_ns(25000000);
	r->call_ns = now_ns() - t0;
}

__attribute__((noinline)) void inject_nanosleep(struct record *r)
{
	struct timespec ts = { .tv_nsec = 30000000 };
	struct sched_truth a, b;
	uint64_t t0;

	sched_truth__read(sched_fd, &a);
	t0 = now_ns();
	nanosleep(&ts, NULL);
	r->call_ns = now_ns() - t0;
	sched_truth__read(sched_fd, &b);
	r->call_runq_ns = b.runq_ns - a.runq_ns;
}

/*
 * Journals dirtied before the loop starts (writing 48 MiB would itself be a
 * CPU stall): each fsync iteration flushes the next one.
 */
#define MAX_JOURNALS 16
static int journal_fds[MAX_JOURNALS], njournals, next_journal;

static void journals__prepare(int count)
{
	static char buf[1 << 20];

	memset(buf, 'x', sizeof(buf));
	for (njournals = 0; njournals < count && njournals < MAX_JOURNALS; njournals++) {
		int fd = open(fsync_path, O_RDWR | O_CREAT | O_TRUNC, 0600);

		if (fd < 0)
			exit(3);
		unlink(fsync_path);	/* the open fd keeps it; nothing is left behind */
		for (int i = 0; i < 48; i++) {
			if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
				exit(3);
		}
		journal_fds[njournals] = fd;
	}
}

__attribute__((noinline)) void inject_fsync(struct record *r)
{
	struct sched_truth a, b;
	uint64_t t0;

	sched_truth__read(sched_fd, &a);
	t0 = now_ns();
	fsync(journal_fds[next_journal++ % njournals]);
	r->call_ns = now_ns() - t0;
	sched_truth__read(sched_fd, &b);
	r->call_runq_ns = b.runq_ns - a.runq_ns;
}

__attribute__((noinline)) void inject_mutex_wait(struct record *r)
{
	struct sched_truth a, b;
	uint64_t t0, one = 1;

	if (write(holder_efd, &one, sizeof(one)) != sizeof(one))
		exit(3);
	while (!atomic_load(&holder_has_lock))
		;
	sched_truth__read(sched_fd, &a);
	t0 = now_ns();
	pthread_mutex_lock(&held);
	r->call_ns = now_ns() - t0;
	sched_truth__read(sched_fd, &b);
	r->call_runq_ns = b.runq_ns - a.runq_ns;
	pthread_mutex_unlock(&held);
	atomic_store(&holder_has_lock, 0);
}

__attribute__((noinline)) void inject_runq_starvation(struct record *r)
{
	uint64_t one = 1, t0 = now_ns();

	/* the RT competitor on our CPU preempts us at once and spins ~25 ms */
	pin(0);
	if (write(competitor_efd, &one, sizeof(one)) != sizeof(one))
		exit(3);
	spin_ns(1000000);
	pin(-1);
	r->call_ns = now_ns() - t0;
}

/* One competitor burst: 20 ms of its spin, 20 ms of rest. */
#define HUNG_BURSTS 60

__attribute__((noinline)) void inject_hung_starved(struct record *r)
{
	uint64_t bursts = HUNG_BURSTS, t0 = now_ns();
	struct timespec ts = { .tv_nsec = 600000000 };

	pin(0);
	if (write(competitor_efd, &bursts, sizeof(bursts)) != sizeof(bursts))
		exit(3);
	spin_ns(2400000000ull);
	pin(-1);
	nanosleep(&ts, NULL);
	r->call_ns = now_ns() - t0;
}

/*
 * A CPU spin under a long, fixed-length name: the hostile-input tests patch a
 * copy of this binary to give it escape sequences and newlines instead.
 */
__attribute__((noinline)) void
inject_named_for_patching_0123456789abcdef0123456789abcdef01234567(struct record *r)
{
	uint64_t t0 = now_ns();

	spin_ns(25000000);
	r->call_ns = now_ns() - t0;
}

__attribute__((noinline)) void inject_small_work(struct record *r)
{
	spin_ns(2000000);
	r->call_ns = 2000000;
}

static void *holder__run(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "holder");
	for (;;) {
		struct timespec ts = { .tv_nsec = 20000000 };
		uint64_t v;

		if (read(holder_efd, &v, sizeof(v)) != sizeof(v))
			continue;
		pthread_mutex_lock(&held);
		atomic_store(&holder_has_lock, 1);
		nanosleep(&ts, NULL);
		pthread_mutex_unlock(&held);
	}
	return NULL;
}

/* cpu -1: any CPU */
static void *competitor__run(void *arg)
{
	struct sched_param sp = { .sched_priority = 10 };
	uint64_t v;

	(void)arg;
	pthread_setname_np(pthread_self(), "competitor");
	pin(0);
	if (sched_setscheduler(0, SCHED_FIFO, &sp))
		perror("stallwork: SCHED_FIFO");
	for (;;) {
		struct timespec rest = { .tv_nsec = 20000000 };

		if (read(competitor_efd, &v, sizeof(v)) != sizeof(v))
			continue;
		if (v == 1) {
			spin_ns(25000000);
			continue;
		}
		/* bursts: the loop on our CPU gets the rests */
		for (uint64_t i = 0; i < v; i++) {
			spin_ns(20000000);
			nanosleep(&rest, NULL);
		}
	}
	return NULL;
}

/*
 * Is the iteration the kind it injected, by its own measure? The share of its
 * busy time in the injected component: on CPU for a spin, asleep for the
 * blocking kinds (fsync also burns kernel CPU queueing the writeback), waiting
 * for a CPU for starvation.
 */
static bool record__clean(const struct record *r)
{
	uint64_t off = r->oncpu_ns + r->runq_ns, blocked = r->busy_ns > off ? r->busy_ns - off : 0;
	double busy = (double)r->busy_ns;

	if (!strcmp(r->kind, "cpu") || !strcmp(r->kind, "named"))
		return r->oncpu_ns >= 0.8 * busy;
	if (!strcmp(r->kind, "sleep") || !strcmp(r->kind, "mutex"))
		return blocked >= 0.8 * busy;
	if (!strcmp(r->kind, "fsync"))
		return blocked >= 0.7 * busy;
	if (!strcmp(r->kind, "runq"))
		return r->runq_ns >= 0.8 * busy;
	if (!strcmp(r->kind, "hung"))
		return r->runq_ns >= 0.3 * busy;
	return true;
}

static void (*injector(const char *kind))(struct record *)
{
	if (!strcmp(kind, "cpu"))
		return inject_cpu_spin;
	if (!strcmp(kind, "sleep"))
		return inject_nanosleep;
	if (!strcmp(kind, "fsync"))
		return inject_fsync;
	if (!strcmp(kind, "mutex"))
		return inject_mutex_wait;
	if (!strcmp(kind, "runq"))
		return inject_runq_starvation;
	if (!strcmp(kind, "small"))
		return inject_small_work;
	if (!strcmp(kind, "named"))
		return inject_named_for_patching_0123456789abcdef0123456789abcdef01234567;
	if (!strcmp(kind, "hung"))
		return inject_hung_starved;
	return NULL;
}

/* Seconds to add to CLOCK_MONOTONIC for unix time: how a tracer's timestamps compare. */
static double mono_to_wall(void)
{
	struct timespec wall;

	clock_gettime(CLOCK_REALTIME, &wall);
	return (double)wall.tv_sec + (double)wall.tv_nsec / 1e9 - (double)now_ns() / 1e9;
}

static void truth__write(const char *path, uint64_t last_edge_ns)
{
	FILE *f = fopen(path, "w");

	if (!f)
		exit(1);
	fprintf(f, "{\"pid\":%d,\"tid\":%ld,\"fsync_path\":\"%s\",\"mono_to_wall\":%.6f,"
		"\"records\":[", getpid(), syscall(SYS_gettid), fsync_path, mono_to_wall());
	for (int i = 0; i < nrecords; i++) {
		const struct record *r = &records[i];

		fprintf(f, "%s{\"kind\":\"%s\",\"start_ns\":%llu,\"busy_ns\":%llu,\"call_ns\":%llu,"
			"\"call_runq_ns\":%llu,\"oncpu_ns\":%llu,\"runq_ns\":%llu,\"edge_ns\":%llu,"
			"\"edge_cpu_ns\":%llu,"
			"\"sleeps\":%llu,\"clean\":%s}", i ? "," : "", r->kind,
			(unsigned long long)r->start_ns, (unsigned long long)r->busy_ns,
			(unsigned long long)r->call_ns, (unsigned long long)r->call_runq_ns,
			(unsigned long long)r->oncpu_ns, (unsigned long long)r->runq_ns,
			(unsigned long long)r->edge_ns, (unsigned long long)r->edge_cpu_ns,
			(unsigned long long)r->sleeps,
			r->clean ? "true" : "false");
	}
	fprintf(f, "],\"last_edge_ns\":%llu}\n", (unsigned long long)last_edge_ns);
	fclose(f);
}

int main(int argc, char **argv)
{
	struct itimerspec its = { .it_interval.tv_nsec = 40000000, .it_value.tv_nsec = 40000000 };
	struct epoll_event ev = { .events = EPOLLIN }, out[4];
	char *kinds[16], *list;
	int nkinds = 0, repeat, ep, tfd;
	pthread_t holder, competitor;
	struct sched_truth before, after;
	uint64_t expirations, cpu, cpu_end;

	if (argc < 4) {
		fprintf(stderr, "usage: stallwork OUT KINDS REPEAT [--go]\n");
		return 2;
	}
	repeat = atoi(argv[3]);
	list = strdup(argv[2]);
	for (char *k = strtok(list, ","); k && nkinds < 16; k = strtok(NULL, ","))
		kinds[nkinds++] = k;
	snprintf(fsync_path, sizeof(fsync_path), "/var/tmp/stallwork-%d.dat", getpid());
	competitor_efd = eventfd(0, 0);
	holder_efd = eventfd(0, 0);
	pthread_create(&holder, NULL, holder__run, NULL);
	pthread_create(&competitor, NULL, competitor__run, NULL);
	for (int k = 0; k < nkinds; k++) {
		if (!strcmp(kinds[k], "fsync"))
			journals__prepare(repeat);
	}
	/*
	 * Ahead of ordinary jobs (we are root in the tests): background work on
	 * a 2-CPU machine would add run-queue time to the CPU and sleep
	 * injections. Starvation is injected on purpose, by a SCHED_FIFO thread.
	 */
	setpriority(PRIO_PROCESS, 0, -10);
	printf("%d\n", getpid());
	fflush(stdout);
	if (argc > 4 && !strcmp(argv[4], "--go")) {
		char line[16];

		if (!fgets(line, sizeof(line), stdin))
			return 1;
	}
	ep = epoll_create1(0);
	tfd = timerfd_create(CLOCK_MONOTONIC, 0);
	epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev);
	timerfd_settime(tfd, 0, &its, NULL);
	sched_fd = sched_truth__open();
	sched_truth__read(sched_fd, &before);
	cpu_end = thread_cpu_ns();
	for (int k = 0; k < nkinds; k++) {
		void (*inject)(struct record *) = injector(kinds[k]);

		if (!inject) {
			fprintf(stderr, "stallwork: unknown kind %s\n", kinds[k]);
			return 2;
		}
		for (int i = 0; i < repeat && nrecords < MAX_RECORDS; i++) {
			struct record *r = &records[nrecords++];
			struct sched_truth start;
			uint64_t t0;

			epoll_wait(ep, out, 4, -1);
			t0 = now_ns();
			cpu = thread_cpu_ns();
			r->start_ns = t0;
			sched_truth__read(sched_fd, &start);
			r->edge_cpu_ns = cpu - cpu_end;
			r->edge_ns = sched_truth__edge_ns(&before, &start) + r->edge_cpu_ns;
			if (read(tfd, &expirations, sizeof(expirations)) < 0)
				return 1;
			r->kind = kinds[k];
			inject(r);
			sched_truth__read(sched_fd, &before);
			cpu_end = thread_cpu_ns();
			r->busy_ns = now_ns() - t0;
			r->oncpu_ns = before.oncpu_ns - start.oncpu_ns;
			r->runq_ns = before.runq_ns - start.runq_ns;
			r->sleeps = before.slept - start.slept;
			r->clean = record__clean(r);
		}
	}
	epoll_wait(ep, out, 4, 0);
	cpu = thread_cpu_ns();
	sched_truth__read(sched_fd, &after);
	for (int i = 0; i < njournals; i++)
		close(journal_fds[i]);
	truth__write(argv[1], sched_truth__edge_ns(&before, &after) + cpu - cpu_end);
	return 0;
}
