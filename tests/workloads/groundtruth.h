/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Helpers the test workloads share: clocks, spinning, ground-truth output. */
#ifndef LOOPWATCH_GROUNDTRUTH_H
#define LOOPWATCH_GROUNDTRUTH_H

#include <stdint.h>
#include <stdio.h>
#include <time.h>

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Burn CPU for ns nanoseconds of wall time. */
static inline void spin_ns(uint64_t ns)
{
	uint64_t end = now_ns() + ns;

	while (now_ns() < end)
		;
}

#ifdef _GNU_SOURCE
#include <sched.h>

/* Run on cpu only; -1: on any CPU again. */
static inline void pin(int cpu)
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

/* Deterministic xorshift: the same seed gives the same stall pattern. */
static inline uint32_t rng_next(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

#endif
