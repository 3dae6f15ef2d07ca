/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Everything that crosses between the BPF programs and userspace: the
 * per-thread loop record, the events sent through the ring buffer and the
 * histogram bucket math. Both sides include this file; keep it free of
 * anything only one side can compile.
 */
#ifndef LOOPWATCH_H
#define LOOPWATCH_H

#define LW_COMM_LEN 16
#define LW_MAX_LOOPS 4096	/* loop threads tracked at once */
#define LW_MAX_PIDS 1024	/* -p filter entries */

/*
 * Log-linear histogram of nanoseconds: values below 2^LW_HIST_SUB_BITS have a
 * bucket each; above, every power of two is split into 2^LW_HIST_SUB_BITS
 * sub-buckets, so a bucket is at most 1/32 = 3.1 % wide and its midpoint is
 * within 1.6 % of any value in it. The top power is 2^LW_HIST_MAX_EXP ns
 * (~137 s); larger values land in the last bucket and the exact maximum is
 * kept beside the histogram.
 */
#define LW_HIST_SUB_BITS 5
#define LW_HIST_SUB (1u << LW_HIST_SUB_BITS)
#define LW_HIST_MAX_EXP 36
#define LW_HIST_BUCKETS ((LW_HIST_MAX_EXP - LW_HIST_SUB_BITS + 2) * LW_HIST_SUB)

static __always_inline unsigned int lw_log2(__u64 v)
{
	unsigned int r = 0, shift;

	/* branchy binary search: no loop, so the verifier sees a fixed cost */
	shift = (v > 0xffffffffULL) << 5; v >>= shift; r |= shift;
	shift = (v > 0xffff) << 4; v >>= shift; r |= shift;
	shift = (v > 0xff) << 3; v >>= shift; r |= shift;
	shift = (v > 0xf) << 2; v >>= shift; r |= shift;
	shift = (v > 0x3) << 1; v >>= shift; r |= shift;
	r |= (v >> 1);
	return r;
}

static __always_inline unsigned int lw_hist_bucket(__u64 v)
{
	unsigned int e, sub;

	if (v < LW_HIST_SUB)
		return (unsigned int)v;
	e = lw_log2(v);
	if (e > LW_HIST_MAX_EXP)
		return LW_HIST_BUCKETS - 1;
	sub = (unsigned int)(v >> (e - LW_HIST_SUB_BITS)) & (LW_HIST_SUB - 1);
	return (e - LW_HIST_SUB_BITS + 1) * LW_HIST_SUB + sub;
}

/* Smallest value that falls in bucket idx. */
static __always_inline __u64 lw_hist_lower(unsigned int idx)
{
	unsigned int e, sub;

	if (idx < LW_HIST_SUB)
		return idx;
	e = idx / LW_HIST_SUB + LW_HIST_SUB_BITS - 1;
	sub = idx % LW_HIST_SUB;
	return (__u64)(LW_HIST_SUB + sub) << (e - LW_HIST_SUB_BITS);
}

/* One past the largest value of bucket idx (the last bucket is open-ended). */
static __always_inline __u64 lw_hist_upper(unsigned int idx)
{
	return idx + 1 < LW_HIST_BUCKETS ? lw_hist_lower(idx + 1) : ~0ULL;
}

struct lw_hist {
	__u64 counts[LW_HIST_BUCKETS];
};

enum lw_thread_flags {
	LW_THREAD_EXITED = 1,
};

/*
 * One loop thread, keyed by tid in the "loops" map. The BPF side owns every
 * field; userspace only reads, diffs successive snapshots and deletes records
 * flagged LW_THREAD_EXITED once it has read them.
 */
struct lw_loop {
	__u32 pid;
	__u32 tid;
	__u64 start_ns;		/* task start time: tells a reused tid apart */
	char comm[LW_COMM_LEN];	/* process (group leader) name */
	char thread[LW_COMM_LEN];
	__u32 flags;
	__u32 in_wait;		/* inside a wait call right now */
	__u64 wait_enter_ns;
	__u64 busy_start_ns;	/* return of the last wait call; 0 before the first */

	/* totals since the thread was first seen, all monotonic */
	__u64 iterations;
	__u64 busy_ns;
	__u64 idle_ns;
	__u64 max_busy_ns;
	struct lw_hist busy_hist;
};

#endif /* LOOPWATCH_H */
