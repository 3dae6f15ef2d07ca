// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Histogram bucket math and percentiles: empty, one sample, edges, past the top. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/hist.h"

#include "check.h"

static struct lw_hist h;

static void hist__add(struct lw_hist *hist, __u64 v)
{
	hist->counts[lw_hist_bucket(v)]++;
}

static double rel_err(__u64 got, __u64 want)
{
	double d = (double)got - (double)want;

	return (d < 0 ? -d : d) / (double)want;
}

static void test_empty(void)
{
	struct lag_summary s;

	memset(&h, 0, sizeof(h));
	hist__summarize(&h, 0, &s);
	CHECK(s.count == 0 && s.p50_ns == 0 && s.p99_ns == 0 && s.max_ns == 0,
	      "empty histogram gives zeros");
}

static void test_one_sample(void)
{
	struct lag_summary s;

	memset(&h, 0, sizeof(h));
	hist__add(&h, 1234567);
	hist__summarize(&h, 1234567, &s);
	CHECK(s.count == 1, "count 1");
	CHECK(rel_err(s.p50_ns, 1234567) < 0.016, "p50 %llu", (unsigned long long)s.p50_ns);
	CHECK(s.p999_ns <= 1234567 && rel_err(s.p999_ns, 1234567) < 0.016, "p99.9 capped");
	CHECK(s.max_ns == 1234567, "max exact %llu", (unsigned long long)s.max_ns);
}

/* Every bucket edge maps into its own bucket and the buckets tile the range. */
static void test_edges(void)
{
	int bad = 0;

	for (unsigned int i = 0; i < LW_HIST_BUCKETS; i++) {
		__u64 lo = lw_hist_lower(i), hi = lw_hist_upper(i);

		if (lw_hist_bucket(lo) != i)
			bad++;
		if (i + 1 < LW_HIST_BUCKETS && (lw_hist_bucket(hi - 1) != i || hi <= lo))
			bad++;
		/* each bucket is at most 1/32 of its lower bound wide */
		if (i >= LW_HIST_SUB && i + 1 < LW_HIST_BUCKETS &&
		    (double)(hi - lo) / (double)lo > 1.0 / LW_HIST_SUB + 1e-12)
			bad++;
	}
	CHECK(bad == 0, "%d bucket edge errors", bad);
	CHECK(lw_hist_bucket(0) == 0 && lw_hist_bucket(31) == 31 && lw_hist_bucket(32) == 32,
	      "small values exact");
	CHECK(lw_hist_bucket(1000000) != lw_hist_bucket(1040000), "1 ms vs 1.04 ms differ");
}

static void test_past_top(void)
{
	__u64 huge = 1ULL << 40, top = (1ULL << (LW_HIST_MAX_EXP + 1));
	struct lag_summary s;

	CHECK(lw_hist_bucket(huge) == LW_HIST_BUCKETS - 1, "past the top: last bucket");
	CHECK(lw_hist_bucket(~0ULL) == LW_HIST_BUCKETS - 1, "u64 max: last bucket");
	CHECK(lw_hist_bucket(top - 1) == LW_HIST_BUCKETS - 1, "top value: last bucket");
	memset(&h, 0, sizeof(h));
	hist__add(&h, huge);
	hist__summarize(&h, huge, &s);
	CHECK(s.p50_ns == huge && s.max_ns == huge, "open bucket reports the exact max");
}

static int u64__cmp(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

/* nearest rank, the definition loopwatch uses */
static __u64 exact__percentile(const __u64 *sorted, int n, double q)
{
	int rank = (int)(q * n);

	if (rank < q * n)
		rank++;
	return sorted[(rank < 1 ? 1 : rank) - 1];
}

/* Percentiles of a known distribution are within 3 % of the exact ones. */
static void test_percentiles(void)
{
	enum { N = 100000 };
	static __u64 v[N];
	static const double qs[] = { 0.5, 0.9, 0.99, 0.999 };
	__u64 max = 0;
	unsigned long long seed = 42;

	memset(&h, 0, sizeof(h));
	for (int i = 0; i < N; i++) {
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		v[i] = 1000 + (seed >> 33) % 50000000;	/* 1 us .. 50 ms */
		hist__add(&h, v[i]);
		if (v[i] > max)
			max = v[i];
	}
	qsort(v, N, sizeof(*v), u64__cmp);
	for (unsigned int i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
		__u64 got = hist__percentile(&h, N, qs[i], max);
		__u64 want = exact__percentile(v, N, qs[i]);

		CHECK(rel_err(got, want) < 0.03, "p%g: %llu vs exact %llu", qs[i] * 100,
		      (unsigned long long)got, (unsigned long long)want);
	}
	CHECK(hist__max_estimate(&h, max) == max, "max exact");
	CHECK(rel_err(hist__count_le(&h, 25000000), N / 2) < 0.03, "count_le(25 ms) ~ half");
	CHECK(hist__count_le(&h, ~0ULL) == N, "count_le(inf) is everything");
	CHECK(hist__count_le(&h, 500) == 0, "count_le below all values is 0");
}

/*
 * The exponential view (OTLP, native histograms): buckets 2^(1/256) wide,
 * each kernel bucket's middle inside the one it is counted in, and every
 * kernel bucket an index of its own, rising with it (the encoders rely on it).
 */
static void test_exponential(void)
{
	int bad_ratio = 0, bad_mid = 0, bad_order = 0, prev = 0, index;

	CHECK(hist__exp_lower(0) == 1.0 && hist__exp_lower(256) == 2.0 &&
	      hist__exp_lower(-256) == 0.5 && hist__exp_lower(-31 * 256) == 1.0 / 2147483648.0,
	      "powers of two exact");
	for (int i = -40 * 256; i < 10 * 256; i++) {
		double r = hist__exp_lower(i + 1) / hist__exp_lower(i);

		bad_ratio += r < 1.0027112750 || r > 1.0027112751;
	}
	CHECK(!bad_ratio, "%d buckets not 2^(1/256) wide", bad_ratio);
	CHECK(!hist__exp_index(0, &index), "0 ns: the zero bucket");
	for (unsigned int b = 1; b < LW_HIST_BUCKETS; b++) {
		double mid = b + 1 < LW_HIST_BUCKETS ?
			     ((double)lw_hist_lower(b) + (double)(lw_hist_upper(b) - 1)) / 2 / 1e9 :
			     (double)lw_hist_lower(b) / 1e9;

		if (!hist__exp_index(b, &index)) {
			bad_mid++;
			continue;
		}
		bad_mid += !(hist__exp_lower(index) < mid && mid <= hist__exp_lower(index + 1));
		bad_order += b > 1 && index <= prev;
		prev = index;
	}
	CHECK(!bad_mid, "%d kernel buckets counted outside their middle's", bad_mid);
	CHECK(!bad_order, "%d kernel buckets share or reverse an index", bad_order);
	CHECK(hist__exp_index(lw_hist_bucket(10000000), &index) &&
	      hist__exp_lower(index) < 0.0102 && hist__exp_lower(index + 1) > 0.0099, "10 ms");
}

int main(void)
{
	test_exponential();
	test_empty();
	test_one_sample();
	test_edges();
	test_past_top();
	test_percentiles();
	return check__report();
}
