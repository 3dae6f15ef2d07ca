/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The two clocks: CLOCK_MONOTONIC is bpf_ktime_get_ns()'s, CLOCK_REALTIME the
 * user's; and the calling thread's CPU time, for what loopwatch's own work costs.
 */
#ifndef LOOPWATCH_LIB_CLOCK_H
#define LOOPWATCH_LIB_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t clock__mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline double clock__mono(void)
{
	return (double)clock__mono_ns() / 1e9;
}

static inline double clock__wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline uint64_t clock__thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline double clock__thread_cpu(void)
{
	return (double)clock__thread_cpu_ns() / 1e9;
}

#endif
