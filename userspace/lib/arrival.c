// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "lib/arrival.h"

/* The largest value bucket idx can hold: below its upper bound, and never above max_ns. */
static double bucket__top(unsigned int idx, __u64 max_ns)
{
	__u64 lo = lw_hist_lower(idx), top = lw_hist_upper(idx) - 1;

	if (max_ns >= lo && max_ns < top)
		top = max_ns;
	return (double)top;
}

/* The sum over bucket idx of max(0, d - x), for x inside it (lw_hist_lower(idx) <= x). */
static double bucket__excess(const struct lw_hist *h, const struct lw_hist_sums *s,
			     unsigned int idx, double x, __u64 max_ns, bool upper)
{
	double lo = (double)lw_hist_lower(idx), top = bucket__top(idx, max_ns);
	double n = (double)h->counts[idx], sum = (double)s->ns[idx], v;

	if (!h->counts[idx])
		return 0;
	if (!upper) {
		/* Jensen: max(0, d - x) is convex in d, so at least its value at the mean */
		v = sum - x * n;
		return v > 0 ? v : 0;
	}
	if (top <= lo || x >= top)
		return 0;
	/* the chord between the bucket's ends lies above a convex function */
	return (sum - lo * n) / (top - lo) * (top - x);
}

double arrival__excess_ns(const struct lw_hist *h, const struct lw_hist_sums *s, __u64 x,
			  __u64 max_ns, bool upper)
{
	unsigned int k = lw_hist_bucket(x);
	double above = 0;

	for (unsigned int j = k + 1; j < LW_HIST_BUCKETS; j++)
		above += (double)s->ns[j] - (double)x * (double)h->counts[j];
	return above + bucket__excess(h, s, k, (double)x, max_ns, upper);
}

/*
 * Where the linear F(x) = sum - x * n meets a, for a bucket whose part of F
 * is sum - x * n inside the bucket too (n > 0).
 */
static double line__solve(double sum, double n, double a)
{
	return n > 0 ? (sum - a) / n : 0;
}

static double clamp(double v, double lo, double hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

__u64 arrival__quantile(const struct lw_hist *h, const struct lw_hist_sums *s, __u64 span_ns,
			double q, __u64 max_ns)
{
	double a = (1.0 - q) * (double)span_ns, sum = 0, n = 0;
	double lo, top, r, m, x_hi, x_lo;
	int k;

	if (!span_ns || q >= 1.0)
		return max_ns;
	/*
	 * From the top down, F(lower bound of k) = sum - lower * n over buckets >= k,
	 * exact: the first bucket where it reaches a holds the quantile, or the
	 * straight stretch between that bucket's top and the next value up.
	 */
	for (k = LW_HIST_BUCKETS - 1; k >= 0; k--) {
		double lower = (double)lw_hist_lower((unsigned int)k);
		double with = sum + (double)s->ns[k], nwith = n + (double)h->counts[k];

		if (h->counts[k] && with - lower * nwith >= a)
			break;
		sum = with;
		n = nwith;
	}
	/*
	 * Below the shortest value F is sum - x * n again: F(0), all the busy
	 * time, is over a, or most arrivals wait 0.
	 */
	if (k < 0)
		return sum > a ? (__u64)(line__solve(sum, n, a) + 0.5) : 0;
	lo = (double)lw_hist_lower((unsigned int)k);
	top = bucket__top((unsigned int)k, max_ns);
	/* at the bucket's top its values count no more: F is exact there */
	if (n > 0 && sum - top * n >= a)
		return (__u64)(line__solve(sum, n, a) + 0.5);
	/* inside the bucket: the chord's solution is above the quantile, Jensen's below */
	r = top > lo ? ((double)s->ns[k] - lo * (double)h->counts[k]) / (top - lo) : 0;
	x_hi = n + r > 0 ? (sum + r * top - a) / (n + r) : lo;
	m = (double)s->ns[k] / (double)h->counts[k];
	if (n > 0 && sum - m * n >= a)
		x_lo = line__solve(sum, n, a);
	else
		x_lo = line__solve(sum + (double)s->ns[k], n + (double)h->counts[k], a);
	x_hi = clamp(x_hi, lo, top);
	x_lo = clamp(x_lo, lo, top);
	return (__u64)((x_lo + x_hi) / 2 + 0.5);
}

double arrival__sum_over_ns(const struct lw_hist *h, const struct lw_hist_sums *s, __u64 x,
			    __u64 max_ns)
{
	unsigned int k = lw_hist_bucket(x);
	double sum = 0, lo = (double)lw_hist_lower(k), top = bucket__top(k, max_ns);

	for (unsigned int j = k + 1; j < LW_HIST_BUCKETS; j++)
		sum += (double)s->ns[j];
	/* the bucket x falls in: its sum in proportion to the part of its range at or over x */
	if (!h->counts[k])
		return sum;
	if (x <= lo || top <= lo)
		return sum + (double)s->ns[k];
	if ((double)x > top)
		return sum;
	return sum + (double)s->ns[k] * (top - (double)x + 1) / (top - lo + 1);
}

void arrival__estimate_sums(struct lw_hist_sums *s, const struct lw_hist *h, unsigned int n)
{
	for (unsigned int i = 0; i < n && i < LW_HIST_BUCKETS; i++)
		s->ns[i] = h->counts[i] * ((lw_hist_lower(i) + lw_hist_upper(i) - 1) / 2);
}

void arrival__diff(struct lw_hist_sums *dst, const struct lw_hist_sums *a,
		   const struct lw_hist_sums *b)
{
	for (unsigned int i = 0; i < LW_HIST_BUCKETS; i++)
		dst->ns[i] = a->ns[i] >= b->ns[i] ? a->ns[i] - b->ns[i] : 0;
}

/* The longest value: exact (*exact) when the top bucket holds one, else within it. */
static __u64 arrival__max(const struct lw_hist *h, const struct lw_hist_sums *s, __u64 max_ns,
			  bool *exact)
{
	for (int k = LW_HIST_BUCKETS - 1; k >= 0; k--) {
		__u64 n = h->counts[k], lo = lw_hist_lower((unsigned int)k), hi;

		if (!n)
			continue;
		*exact = true;
		if (n == 1)
			return s->ns[k];
		if (max_ns >= lo && max_ns < lw_hist_upper((unsigned int)k))
			return max_ns;
		*exact = false;
		/* at least the mean, at most what the others at the bound leave */
		hi = s->ns[k] - (n - 1) * lo;
		if (hi > lw_hist_upper((unsigned int)k) - 1)
			hi = lw_hist_upper((unsigned int)k) - 1;
		return (s->ns[k] / n + hi) / 2;
	}
	return 0;
}

void arrival__summarize(const struct lw_hist *h, const struct lw_hist_sums *s, __u64 span_ns,
			__u64 max_ns, __u64 over_ns, struct arrival_lag *out)
{
	double busy = 0;
	bool exact = false;

	for (unsigned int i = 0; i < LW_HIST_BUCKETS; i++)
		busy += (double)s->ns[i];
	/* an iteration that began before the window counts whole: the window holds it */
	if ((double)span_ns < busy)
		span_ns = (__u64)busy;
	out->span_ns = span_ns;
	out->busy_ns = (__u64)busy;
	out->max_ns = arrival__max(h, s, max_ns, &exact);
	/* a bound on every value, for the top bucket's range: the estimate is none */
	if (exact)
		max_ns = out->max_ns;
	out->p50_ns = arrival__quantile(h, s, span_ns, 0.50, max_ns);
	out->p90_ns = arrival__quantile(h, s, span_ns, 0.90, max_ns);
	out->p99_ns = arrival__quantile(h, s, span_ns, 0.99, max_ns);
	out->over_ns = over_ns;
	out->over_share = span_ns && over_ns ?
			  arrival__sum_over_ns(h, s, over_ns, max_ns) / (double)span_ns : 0;
}
