// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A light epoll loop (1 ms of CPU on a 5 ms timer) and a thread named "hog"
 * that never sleeps, both pinned to one CPU: whatever delays the loop is the
 * hog, or the CPU quota of the cgroup the test put the process in. Ground
 * truth: the loop's iterations, its own run-queue time (schedstat) in all and
 * the longest between two returns of its wait (a wait for the CPU lands in
 * schedstat whole, at the switch-in that ends it), and its
 * cpu cgroup's cpu.stat (cgroup v1 cpu controller, or v2) read just before
 * the hog starts and just after the loop's last iteration ended.
 *
 * usage: hogwork OUT.json SECONDS [--nice N] [--fifo MS] [--busy MS] [--go]
 *   --nice N: the hog's nice value (a weight beside the loop's, no quota)
 *   --fifo MS: the hog runs at SCHED_FIFO in bursts of MS every 100 ms (sleeping
 *              between): whatever iteration a burst begins in waits MS for the CPU
 *   --busy MS: the loop's CPU time per 5 ms tick (default 1)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include "groundtruth.h"

struct cpu_stat {
	unsigned long long nr_periods;
	unsigned long long nr_throttled;
	unsigned long long throttled_ns;
};

static volatile bool hog_stop;
static int hog_nice, hog_fifo_ms, hog_bursts;
static long hog_tid;

static void *hog__run(void *arg)
{
	struct sched_param sp = { .sched_priority = 10 };

	(void)arg;
	/*
	 * Named by itself, before its first burst: named by its creator, the
	 * burst (at SCHED_FIFO, on its creator's CPU) could come first, and
	 * the stalls it causes would say "hogwork".
	 */
	prctl(PR_SET_NAME, "hog");
	hog_tid = syscall(SYS_gettid);
	setpriority(PRIO_PROCESS, (id_t)hog_tid, hog_nice);
	if (!hog_fifo_ms) {
		while (!hog_stop)
			;
		return NULL;
	}
	if (sched_setscheduler(0, SCHED_FIFO, &sp))
		return NULL;
	while (!hog_stop) {
		spin_ns((uint64_t)hog_fifo_ms * 1000000);
		hog_bursts++;
		usleep((useconds_t)(100 - hog_fifo_ms) * 1000);
	}
	return NULL;
}

/* The cpu controller's directory of this process: v1's cpu hierarchy, else v2's. */
static bool cgroup__cpu_dir(char *dir, size_t len)
{
	FILE *f = fopen("/proc/self/cgroup", "r");
	char line[512], v2[512] = "";
	bool found = false;

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		char *ctrl = strchr(line, ':'), *path;

		if (!ctrl || !(path = strchr(ctrl + 1, ':')))
			continue;
		*path++ = '\0';
		path[strcspn(path, "\n")] = '\0';
		ctrl++;
		if (!*ctrl) {
			snprintf(v2, sizeof(v2), "%s", path);
			continue;
		}
		for (char *c = strtok(ctrl, ","); c; c = strtok(NULL, ","))
			if (!strcmp(c, "cpu")) {
				snprintf(dir, len, "/sys/fs/cgroup/cpu%s", path);
				found = true;
			}
	}
	fclose(f);
	if (!found && v2[0]) {
		snprintf(dir, len, "/sys/fs/cgroup%s", v2);
		found = true;
	}
	return found;
}

/* v1 throttled_time (ns) or v2 throttled_usec */
static void cpu_stat__read(const char *dir, struct cpu_stat *s)
{
	char path[600], key[64];
	unsigned long long v;
	FILE *f;

	memset(s, 0, sizeof(*s));
	snprintf(path, sizeof(path), "%s/cpu.stat", dir);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fscanf(f, "%63s %llu", key, &v) == 2) {
		if (!strcmp(key, "nr_periods"))
			s->nr_periods = v;
		else if (!strcmp(key, "nr_throttled"))
			s->nr_throttled = v;
		else if (!strcmp(key, "throttled_time"))
			s->throttled_ns = v;
		else if (!strcmp(key, "throttled_usec"))
			s->throttled_ns = v * 1000;
	}
	fclose(f);
}

int main(int argc, char **argv)
{
	struct sched_truth t0, t1, last, now;
	struct cpu_stat s0, s1;
	struct epoll_event ev;
	char dir[560] = "";
	int ep, tfd, sfd, iterations = 0, busy_ms = 1;
	uint64_t start, end, runq_max = 0;
	double wall;
	pthread_t hog;
	FILE *f;

	if (argc < 3) {
		fprintf(stderr, "usage: hogwork OUT.json SECONDS [--nice N] [--go]\n");
		return 2;
	}
	for (int i = 3; i < argc; i++)
		if (!strcmp(argv[i], "--nice") && i + 1 < argc)
			hog_nice = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--fifo") && i + 1 < argc)
			hog_fifo_ms = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--busy") && i + 1 < argc)
			busy_ms = atoi(argv[++i]);
	if (hog_fifo_ms < 0 || hog_fifo_ms > 90 || busy_ms < 0 || busy_ms > 4) {
		fprintf(stderr, "hogwork: --fifo 0-90, --busy 0-4\n");
		return 2;
	}
	if (go__await(!strcmp(argv[argc - 1], "--go")))
		return 1;
	pin(1);
	ep = ticker__open(5000000, &tfd);
	sfd = sched_truth__open();
	/* a first wait: the loop is one before the hog starts */
	epoll_wait(ep, &ev, 1, 0);
	cgroup__cpu_dir(dir, sizeof(dir));
	cpu_stat__read(dir, &s0);
	sched_truth__read(sfd, &t0);
	last = t0;
	pthread_create(&hog, NULL, hog__run, NULL);
	start = now_ns();
	end = start + (uint64_t)(atof(argv[2]) * 1e9);
	while (now_ns() < end) {
		if (!ticker__next(ep, tfd, &wall))
			break;
		sched_truth__read(sfd, &now);
		if (now.runq_ns - last.runq_ns > runq_max)
			runq_max = now.runq_ns - last.runq_ns;
		last = now;
		spin_ns((uint64_t)busy_ms * 1000000);
		iterations++;
	}
	/* the last iteration ends at a wait call: cpu.stat right after it */
	epoll_wait(ep, &ev, 1, 0);
	cpu_stat__read(dir, &s1);
	sched_truth__read(sfd, &t1);
	if (t1.runq_ns - last.runq_ns > runq_max)
		runq_max = t1.runq_ns - last.runq_ns;
	hog_stop = true;
	pthread_join(hog, NULL);
	f = fopen(argv[1], "w");
	if (!f)
		return 1;
	fprintf(f,
		"{\"pid\":%d,\"tid\":%ld,\"hog_tid\":%ld,\"cgroup_dir\":\"%s\","
		"\"iterations\":%d,\"runq_ns\":%llu,\"nr_periods\":%llu,\"nr_throttled\":%llu,"
		"\"throttled_ns\":%llu,\"hog_bursts\":%d,\"runq_max_ns\":%llu}\n",
		getpid(), syscall(SYS_gettid), hog_tid, dir, iterations,
		(unsigned long long)(t1.runq_ns - t0.runq_ns), s1.nr_periods - s0.nr_periods,
		s1.nr_throttled - s0.nr_throttled, s1.throttled_ns - s0.throttled_ns, hog_bursts,
		(unsigned long long)runq_max);
	return fclose(f) ? 1 : 0;
}
