/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Arrival-weighted lag: how long an event arriving at a uniformly random
 * moment of a window waits before its loop gets to it. It waits for the rest
 * of the iteration under way (0 while the loop sits in its wait call), so for
 * iteration durations d_i over a window of T ns
 *
 *	P(delay > x) = sum_i max(0, d_i - x) / T
 *
 * and long iterations are hit in proportion to their length: 10 stalls of
 * 30 ms among 50,000 iterations of 50 us are 0.02 % of the iterations but
 * 300 ms of every few seconds.
 *
 * From a struct lw_hist and its struct lw_hist_sums (bpf/lw_abi.h): the sum
 * above is exact at every bucket bound; inside the bucket where a quantile
 * falls the values' spread is unknown, the sum lies between Jensen's bound
 * (all of the bucket at its mean) and the chord (all at its two ends), and the
 * quantile is the middle of the two solutions: within half a bucket, 1.6 % of
 * the value (exact below 32 ns and wherever it falls between buckets).
 */
#ifndef LOOPWATCH_ARRIVAL_H
#define LOOPWATCH_ARRIVAL_H

#include <stdbool.h>
#include "lib/lwtypes.h"

struct arrival_lag {
	__u64 span_ns;		/* T: the window's time (busy and waiting) */
	__u64 busy_ns;		/* sum of d_i: P(delay > 0) = busy_ns / span_ns */
	__u64 p50_ns;
	__u64 p90_ns;
	__u64 p99_ns;
	__u64 max_ns;		/* the longest iteration: no arrival waits longer */
	__u64 over_ns;		/* the bound of over_share */
	double over_share;	/* share of T spent in iterations at or over over_ns */
};

/*
 * sum_i max(0, d_i - x) in ns: upper (the chord) or lower (Jensen) bound;
 * both exact when x is a bucket bound. max_ns: no value is above it (0:
 * unknown).
 */
double arrival__excess_ns(const struct lw_hist *h, const struct lw_hist_sums *s, __u64 x,
			  __u64 max_ns, bool upper);
/* the q-quantile (0 <= q < 1) of the delay over span_ns; 0 while P(delay > 0) <= 1 - q */
__u64 arrival__quantile(const struct lw_hist *h, const struct lw_hist_sums *s, __u64 span_ns,
			double q, __u64 max_ns);
/* sum of the values at or over x: exact above x's bucket, x's bucket pro rata */
double arrival__sum_over_ns(const struct lw_hist *h, const struct lw_hist_sums *s, __u64 x,
			    __u64 max_ns);
/*
 * The sums of the first n buckets, which the kernel does not keep (the hot
 * path of short iterations touches task storage alone, bpf/lw_abi.h): each
 * bucket's values at its middle, within half a bucket (1.6 %) of each.
 */
void arrival__estimate_sums(struct lw_hist_sums *s, const struct lw_hist *h, unsigned int n);
/* dst = a - b, bucket by bucket (b: an earlier snapshot of the same sums) */
void arrival__diff(struct lw_hist_sums *dst, const struct lw_hist_sums *a,
		   const struct lw_hist_sums *b);
/*
 * All of struct arrival_lag over a window of span_ns; max_ns: the window's
 * longest iteration, or a bound on it (0: unknown); over_ns: the stall
 * threshold whose share of time is wanted.
 */
void arrival__summarize(const struct lw_hist *h, const struct lw_hist_sums *s, __u64 span_ns,
			__u64 max_ns, __u64 over_ns, struct arrival_lag *out);

#endif
