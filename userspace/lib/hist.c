// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
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

/* 2^(k/32), k = 0..32: the bounds of one power of two's exponential buckets (no libm) */
static const double exp_bounds[(1 << HIST_EXP_SCALE) + 1] = {
	1,
	1.0218971486541166,
	1.0442737824274138,
	1.0671404006768237,
	1.0905077326652577,
	1.1143867425958924,
	1.1387886347566916,
	1.1637248587775775,
	1.189207115002721,
	1.215247359980469,
	1.241857812073484,
	1.2690509571917332,
	1.2968395546510096,
	1.3252366431597413,
	1.3542555469368927,
	1.383909881963832,
	1.4142135623730951,
	1.4451808069770467,
	1.4768261459394993,
	1.5091644275934228,
	1.5422108254079407,
	1.5759808451078865,
	1.6104903319492543,
	1.6457554781539649,
	1.681792830507429,
	1.7186192981224779,
	1.7562521603732995,
	1.7947090750031072,
	1.8340080864093424,
	1.8741676341103,
	1.9152065613971474,
	1.9571441241754002,
	2,
};

double hist__exp_lower(int index)
{
	int e = index >= 0 ? index / (1 << HIST_EXP_SCALE) :
		-((-index + (1 << HIST_EXP_SCALE) - 1) / (1 << HIST_EXP_SCALE));
	double v = exp_bounds[index - e * (1 << HIST_EXP_SCALE)];

	for (; e > 0; e--)
		v *= 2;
	for (; e < 0; e++)
		v /= 2;
	return v;
}

/* The index of the bucket (base^i, base^(i+1)] that holds v > 0 seconds. */
static int exp__index(double v)
{
	int e = 0, k = 0;

	/* v = r * 2^e, r in (1, 2]: exact, multiplying by 2 loses nothing */
	while (v > 2) {
		v /= 2;
		e++;
	}
	while (v <= 1) {
		v *= 2;
		e--;
	}
	while (k + 1 < (1 << HIST_EXP_SCALE) && v > exp_bounds[k + 1])
		k++;
	return e * (1 << HIST_EXP_SCALE) + k;
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
	i = exp__index(mid / 1e9);
	if (i < HIST_EXP_MIN)
		i = HIST_EXP_MIN;
	if (i >= HIST_EXP_MIN + HIST_EXP_N)
		i = HIST_EXP_MIN + HIST_EXP_N - 1;
	return i - HIST_EXP_MIN;
}
