// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <math.h>
#include "lib/hist.h"

void hist__diff(struct lw_hist *dst, const struct lw_hist *a, const struct lw_hist *b)
{
	for (unsigned int i = 0; i < LW_HIST_BUCKETS; i++)
		dst->counts[i] = a->counts[i] >= b->counts[i] ? a->counts[i] - b->counts[i] : 0;
}

__u64 hist__count(const struct lw_hist *h)
{
	__u64 n = 0;

	for (unsigned int i = 0; i < LW_HIST_BUCKETS; i++)
		n += h->counts[i];
	return n;
}

static __u64 bucket__value(unsigned int idx, __u64 max_ns)
{
	__u64 lo = lw_hist_lower(idx), hi = lw_hist_upper(idx), mid;

	/* the open-ended last bucket has no midpoint: the maximum is the best guess */
	mid = idx + 1 < LW_HIST_BUCKETS ? lo + (hi - 1 - lo) / 2 : max_ns;
	return max_ns && mid > max_ns ? max_ns : mid;
}

__u64 hist__percentile(const struct lw_hist *h, __u64 count, double q, __u64 max_ns)
{
	__u64 rank, seen = 0;

	if (!count)
		return 0;
	rank = (__u64)(q * (double)count);
	if ((double)rank < q * (double)count)
		rank++;
	if (rank < 1)
		rank = 1;
	for (unsigned int i = 0; i < LW_HIST_BUCKETS; i++) {
		seen += h->counts[i];
		if (seen >= rank)
			return bucket__value(i, max_ns);
	}
	return max_ns;
}

__u64 hist__max_estimate(const struct lw_hist *h, __u64 max_ns)
{
	for (int i = LW_HIST_BUCKETS - 1; i >= 0; i--) {
		if (!h->counts[i])
			continue;
		/* the bucket holding the exact maximum: report it exactly */
		if (max_ns >= lw_hist_lower(i) && max_ns < lw_hist_upper(i))
			return max_ns;
		return bucket__value(i, max_ns);
	}
	return 0;
}

void hist__summarize(const struct lw_hist *h, __u64 max_ns, struct lag_summary *out)
{
	out->count = hist__count(h);
	out->p50_ns = hist__percentile(h, out->count, 0.50, max_ns);
	out->p90_ns = hist__percentile(h, out->count, 0.90, max_ns);
	out->p99_ns = hist__percentile(h, out->count, 0.99, max_ns);
	out->p999_ns = hist__percentile(h, out->count, 0.999, max_ns);
	out->max_ns = hist__max_estimate(h, max_ns);
}

__u64 hist__count_le(const struct lw_hist *h, __u64 le_ns)
{
	__u64 n = 0;

	for (unsigned int i = 0; i < LW_HIST_BUCKETS; i++) {
		if (lw_hist_upper(i) - 1 > le_ns)
			break;
		n += h->counts[i];
	}
	return n;
}

int hist__exp_slot(unsigned int b)
{
	__u64 lo, hi;
	double mid;
	int i;

	if (b >= LW_HIST_BUCKETS)
		b = LW_HIST_BUCKETS - 1;
	lo = lw_hist_lower(b);
	hi = lw_hist_upper(b);
	/* the open-ended last bucket: its lower bound */
	mid = b + 1 < LW_HIST_BUCKETS ? ((double)lo + (double)(hi - 1)) / 2 : (double)lo;
	if (mid <= 0)
		return -1;
	i = (int)ceil(log2(mid / 1e9) * (1 << HIST_EXP_SCALE)) - 1;
	if (i < HIST_EXP_MIN)
		i = HIST_EXP_MIN;
	if (i >= HIST_EXP_MIN + HIST_EXP_N)
		i = HIST_EXP_MIN + HIST_EXP_N - 1;
	return i - HIST_EXP_MIN;
}
