/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Percentiles over the kernel's log-linear histograms (bucket math in bpf/lw_abi.h). */
#ifndef LOOPWATCH_HIST_H
#define LOOPWATCH_HIST_H

#include <stdbool.h>
#include "lib/lwtypes.h"

struct lag_summary {
	__u64 count;
	__u64 p50_ns;
	__u64 p90_ns;
	__u64 p99_ns;
	__u64 p999_ns;
	__u64 max_ns;
};

/* dst = a - b, bucket by bucket (b is an earlier snapshot of the same counters) */
void hist__diff(struct lw_hist *dst, const struct lw_hist *a, const struct lw_hist *b);
__u64 hist__count(const struct lw_hist *h);
/*
 * Nearest-rank percentile (q in 0..1): the midpoint of the bucket holding that
 * rank, never above max_ns (the exact maximum kept beside the histogram).
 * 0 for an empty histogram.
 */
__u64 hist__percentile(const struct lw_hist *h, __u64 count, double q, __u64 max_ns);
/* Midpoint of the highest non-empty bucket, capped at max_ns; 0 when empty. */
__u64 hist__max_estimate(const struct lw_hist *h, __u64 max_ns);
void hist__summarize(const struct lw_hist *h, __u64 max_ns, struct lag_summary *out);
/* Observations <= le_ns: whole buckets whose values all are <= le_ns. */
__u64 hist__count_le(const struct lw_hist *h, __u64 le_ns);

/*
 * The same histogram as an exponential one, as OpenTelemetry and Prometheus's
 * native histograms have it, in seconds: at scale 8, index i is the bucket
 * (2^(i/256), 2^((i+1)/256)], 0.27 % wide, finer than any of the kernel's
 * (1.6 to 3.1 %). Each kernel bucket is counted whole in the one that holds
 * its midpoint (the value hist__percentile gives it): a reader's quantile is
 * loopwatch's own to within 0.27 %, and each kernel bucket has an index of
 * its own, rising with it. The outputs keep the kernel's counts and map them
 * when they encode.
 */
#define HIST_EXP_SCALE 8
/* Kernel bucket b's exponential index; false for the bucket of 0 (the zero bucket). */
bool hist__exp_index(unsigned int b, int *index);
/* The lower bound of exponential bucket index, seconds: 2^(index/256). */
double hist__exp_lower(int index);

#endif
