/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the running kernel's BPF offers, probed once at start: the features
 * loopwatch cannot run without (a clear error naming the first one missing and
 * the kernel it came with), those it does without on older kernels (a line
 * each), and the hooks it can choose between (fentry/fexit where the kernel
 * allows it, else the syscall tracepoints, said in one line; the scheduler
 * tick for CPU samples where it is an hrtimer, else perf's cpu-clock).
 */
#ifndef LOOPWATCH_KERNEL_FEATURES_H
#define LOOPWATCH_KERNEL_FEATURES_H

#include <stdbool.h>
#include <stddef.h>

/* the oldest kernel with every required feature (features.c's table) */
#define FEATURES_MIN_KERNEL "5.15"

struct features {
	bool fentry;		/* the wait and flush hooks as fentry/fexit */
	bool bpf_loop;		/* bpf_loop() (5.17); else bounded loops */
	bool percpu_lookup;	/* bpf_map_lookup_percpu_elem() (5.19); else one shared array */
	bool tick;		/* CPU samples at the scheduler tick; else perf's cpu-clock */
	long tick_ns;		/* its period: 1/HZ */
	char no_tick[64];	/* why not, without it */
	char hooks[160];	/* which hooks, and why not fentry: for the start line */
	char fallbacks[512];	/* a line for each feature done without, or "" */
};

/*
 * 0, or -1 with a one-line error in err. LOOPWATCH_TEST_ABSENT (test-only:
 * a comma-separated list of features.c's names) makes features absent that
 * the kernel has, to drive the fallbacks and errors on any kernel.
 */
int features__probe(struct features *f, char *err, size_t errlen);

#endif
