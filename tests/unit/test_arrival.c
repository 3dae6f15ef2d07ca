// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Arrival-weighted lag from a histogram and its bucket sums, against the
 * same quantities computed exactly from the list of iteration durations.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "lib/arrival.h"

#include "check.h"

#define MAX_ITERS 200000

static struct lw_hist h;
static struct lw_hist_sums sums;
static __u64 d[MAX_ITERS];
static int nd;

static void reset(void)
{
	memset(&h, 0, sizeof(h));
	memset(&sums, 0, sizeof(sums));
	nd = 0;
}

/* what loop__end_iteration does in the kernel, and the list beside it */
static void add(__u64 v)
{
	unsigned int idx = lw_hist_bucket(v);

	h.counts[idx]++;
	sums.ns[idx] += v;
	d[nd++] = v;
}

static int cmp_desc(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? 1 : x > y ? -1 : 0;
}

/*
 * The exact quantile: F(x) = sum max(0, d - x) is piecewise linear; walk the
 * durations from the longest down until F reaches (1 - q) * span.
 */
static double exact_quantile(__u64 span, double q)
{
	static __u64 s[MAX_ITERS];
	double a = (1 - q) * (double)span, sum = 0;

	memcpy(s, d, (size_t)nd * sizeof(*s));
	qsort(s, (size_t)nd, sizeof(*s), cmp_desc);
	for (int i = 0; i < nd; i++) {
		double next = i + 1 < nd ? (double)s[i + 1] : 0;

		sum += (double)s[i];
		/* F on [next, s[i]] with the i + 1 longest: sum - x * (i + 1) */
		if (sum - next * (i + 1) >= a)
			return (sum - a) / (i + 1);
	}
	return 0;
}

static double exact_excess(__u64 x)
{
	double f = 0;

	for (int i = 0; i < nd; i++)
		f += d[i] > x ? (double)(d[i] - x) : 0;
	return f;
}

static __u64 exact_max(void)
{
	__u64 m = 0;

	for (int i = 0; i < nd; i++)
		m = d[i] > m ? d[i] : m;
	return m;
}

static bool within(double got, double want, double rel)
{
	return fabs(got - want) <= rel * want + 1;
}

/* the quantiles within half a bucket (1/64 of the value) of the exact ones */
static void check_quantiles(const char *what, __u64 span)
{
	struct arrival_lag lag;
	static const double qs[] = { 0.5, 0.9, 0.99, 0.999 };

	arrival__summarize(&h, &sums, span, exact_max(), 0, &lag);
	for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
		double want = exact_quantile(span, qs[i]);
		__u64 got = arrival__quantile(&h, &sums, span, qs[i], exact_max());

		CHECK(within((double)got, want, 1.0 / 64), "%s q%.3f: %llu vs exact %.0f", what,
		      qs[i], (unsigned long long)got, want);
	}
	CHECK(lag.max_ns == exact_max(), "%s max %llu vs %llu", what,
	      (unsigned long long)lag.max_ns, (unsigned long long)exact_max());
	CHECK(within((double)lag.p99_ns, exact_quantile(span, 0.99), 1.0 / 64), "%s p99", what);
}

/* The case: 10 stalls of 30 ms among 50,000 iterations of 50 us over 5 s. */
static void test_stalls_among_fast_iterations(void)
{
	struct arrival_lag lag;
	__u64 span = 5000000000ull;

	reset();
	for (int i = 0; i < 50000; i++)
		add(50000);
	for (int i = 0; i < 10; i++)
		add(30000000);
	arrival__summarize(&h, &sums, span, 30000000, 10000000, &lag);
	/* F(x) = 10 * (30 ms - x) for x >= 50 us: (1 - 0.99) * 5 s = 50 ms -> x = 25 ms */
	CHECK(within((double)lag.p99_ns, 25e6, 1e-9), "p99 %llu, want 25 ms",
	      (unsigned long long)lag.p99_ns);
	/* 2.8 s of busy time over 5 s: more than half of the arrivals wait */
	CHECK(lag.p50_ns > 0 && lag.p50_ns <= 50000, "p50 %llu", (unsigned long long)lag.p50_ns);
	CHECK(lag.max_ns == 30000000, "max %llu", (unsigned long long)lag.max_ns);
	/* 300 ms of 5 s in iterations over 10 ms */
	CHECK(within(lag.over_share, 0.06, 1e-9), "over share %f", lag.over_share);
	CHECK(lag.busy_ns == 50000ull * 50000 + 300000000ull, "busy %llu",
	      (unsigned long long)lag.busy_ns);
	check_quantiles("stalls", span);
}

/* A loop idle most of the time: most arrivals wait nothing. */
static void test_idle_loop(void)
{
	reset();
	for (int i = 0; i < 1000; i++)
		add(100000);
	CHECK(arrival__quantile(&h, &sums, 10000000000ull, 0.5, 100000) == 0,
	      "1 %% busy: the median arrival waits 0");
	CHECK(arrival__quantile(&h, &sums, 10000000000ull, 0.999, 100000) > 0,
	      "the p99.9 arrival lands in an iteration");
	check_quantiles("idle", 10000000000ull);
}

/* Exact at every bucket bound, bounded between: Jensen <= truth <= chord. */
static void test_excess_bounds(void)
{
	uint32_t seed = 12345;
	int bad = 0, inexact = 0;

	reset();
	for (int i = 0; i < 20000; i++) {
		seed = seed * 1103515245u + 12345u;
		add(1000 + (seed >> 8) % 5000000);
	}
	for (unsigned int k = 100; k < 500; k += 7) {
		__u64 lo = lw_hist_lower(k), mid = lo + (lw_hist_upper(k) - lo) / 3;
		double want = exact_excess(lo);
		double up = arrival__excess_ns(&h, &sums, lo, exact_max(), true);
		double down = arrival__excess_ns(&h, &sums, lo, exact_max(), false);

		inexact += fabs(up - want) > 1e-6 * want + 1 || fabs(down - want) > 1e-6 * want + 1;
		want = exact_excess(mid);
		up = arrival__excess_ns(&h, &sums, mid, exact_max(), true);
		down = arrival__excess_ns(&h, &sums, mid, exact_max(), false);
		bad += !(down <= want * (1 + 1e-9) + 1 && want <= up * (1 + 1e-9) + 1);
	}
	CHECK(!inexact, "%d bucket bounds where the sum is not exact", inexact);
	CHECK(!bad, "%d points outside [Jensen, chord]", bad);
}

/* Random mixes: heavy tails, equal values, one huge iteration, the open top bucket. */
static void test_random_mixes(void)
{
	uint32_t seed = 99;

	for (int round = 0; round < 40; round++) {
		__u64 busy = 0, span;
		char what[32];

		reset();
		for (int i = 0; i < 5000; i++) {
			__u64 v;

			seed = seed * 1664525u + 1013904223u;
			switch (seed % 5) {
			case 0: v = 20000 + (seed >> 12) % 200000; break;
			case 1: v = 1000000 + (seed >> 10) % 3000000; break;
			case 2: v = 50000; break;
			case 3: v = (seed >> 20) % 40; break;
			default: v = (seed % 97) ? 300000 : 15000000 + (seed >> 8) % 50000000; break;
			}
			add(v);
			busy += v;
		}
		if (round == 7)
			add(200000000000ull);	/* past the top power: the open bucket */
		if (round == 7)
			busy += 200000000000ull;
		span = busy + busy / (1 + round % 5) * (round % 3);
		snprintf(what, sizeof(what), "mix %d", round);
		check_quantiles(what, span);
	}
}

static void test_diff_and_empty(void)
{
	struct lw_hist_sums a = { 0 }, b = { 0 }, out;
	struct arrival_lag lag;

	a.ns[40] = 500;
	b.ns[40] = 200;
	b.ns[41] = 9;	/* a restarted record: never negative */
	arrival__diff(&out, &a, &b);
	CHECK(out.ns[40] == 300 && out.ns[41] == 0, "diff %llu %llu",
	      (unsigned long long)out.ns[40], (unsigned long long)out.ns[41]);
	reset();
	arrival__summarize(&h, &sums, 1000000000, 0, 10000000, &lag);
	CHECK(!lag.p50_ns && !lag.p99_ns && !lag.max_ns && lag.over_share == 0,
	      "no iterations: no lag");
	/* a window shorter than the iterations it holds (one began before it) */
	add(3000000);
	arrival__summarize(&h, &sums, 1000000, 3000000, 0, &lag);
	CHECK(lag.span_ns == 3000000 && lag.p50_ns > 0, "span raised to the busy time");
}

int main(void)
{
	test_stalls_among_fast_iterations();
	test_idle_loop();
	test_excess_bounds();
	test_random_mixes();
	test_diff_and_empty();
	return check__report();
}
