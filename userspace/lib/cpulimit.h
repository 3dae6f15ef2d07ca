/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A cgroup's CPU quota and its throttling counters, from the cgroup files
 * that say them: v1's cpu.cfs_quota_us and cpu.cfs_period_us (one integer
 * each), v2's cpu.max ("QUOTA PERIOD", QUOTA "max" when unlimited), and
 * cpu.stat (key-value lines in both; v1 counts throttled_time in ns, v2
 * throttled_usec). Parsers only: the files are read by proc/cpulimit.c.
 */
#ifndef LOOPWATCH_LIB_CPULIMIT_H
#define LOOPWATCH_LIB_CPULIMIT_H

#include <stdbool.h>
#include <stddef.h>
#include "lib/lwtypes.h"

struct cpu_stat {
	__u64 nr_periods;
	__u64 nr_throttled;
	__u64 throttled_ns;	/* summed over the cgroup's CPUs */
};

/* The quota that limits a cgroup: its own or its nearest limited ancestor's. */
struct cpu_limit {
	bool known;		/* a quota was found */
	char cgroup[256];	/* the limited cgroup's path ("..." ends one cut short) */
	__u64 quota_us;		/* CPU time per period, all CPUs together */
	__u64 period_us;
	struct cpu_stat stat;	/* its cpu.stat as the quota was read (zeros: unreadable) */
};

/* v2's cpu.max: false when unlimited ("max") or not a quota line. */
bool cpu_max__parse(const char *text, __u64 *quota_us, __u64 *period_us);
/* One integer file of v1 (cpu.cfs_quota_us: -1 when unlimited). False when not one. */
bool cgroup_int__parse(const char *text, long long *value);
/* cpu.stat of either version: false when it holds none of its counters. */
bool cpu_stat__parse(const char *text, struct cpu_stat *out);

#endif
