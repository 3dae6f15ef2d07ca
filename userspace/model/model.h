/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The model: every loop thread seen, with its latest kernel snapshot and the
 * numbers of the last interval; the kernel's per-process aggregates; the
 * stalls by culprit. Plain data that the sinks read. It reads nothing
 * itself: a drain pulls the kernel's numbers and the threads' names through
 * a struct model_source.
 */
#ifndef LOOPWATCH_MODEL_MODEL_H
#define LOOPWATCH_MODEL_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include "lib/arrival.h"
#include "lib/cgroup.h"
#include "lib/hist.h"
#include "model/attribution.h"
#include "model/report.h"

#define MODEL_RECENT_STALLS 1024

/* Stalls of one process that share the same culprit frames. */
struct offender {
	__u32 pid;
	char comm[LW_COMM_LEN];
	char top[256];		/* as its first stall named it */
	char function[256];	/* what it is counted by: culprit__function() of top */
	__u64 count;
	__u64 total_ns;
	__u64 cause_ns[3];	/* by enum stall_cause */
	double last_ts;
};

struct loop_view {
	__u64 iterations;
	__u64 busy_ns;
	__u64 idle_ns;
	__u64 blocked_ns;	/* of busy: asleep */
	__u64 runq_ns;		/* of busy: waiting for a CPU */
	struct arrival_lag arrival;	/* what an event arriving at a random moment waits */
	struct lag_summary lag;		/* per iteration */
	__u64 throttled_ns;	/* of runq: its cgroup's CPU quota had run out */
	__u64 gil_ns;		/* of busy: asleep waiting for its Python process's GIL */
};

struct loop_thread {
	__u32 pid;
	__u32 tid;
	__u64 start_ns;
	char comm[LW_COMM_LEN];
	char thread[LW_COMM_LEN];
	char exe[256];		/* "" when unreadable */
	char started_as[64];	/* argv[0], as the user knows it ("" when unknown) */
	char cgroup[256];	/* cgroup v2 path ("..." ends one cut short), "" when unknown */
	struct cgroup_identity cg;	/* its service, from the whole path however long */
	struct k8s_names k8s;	/* its pod's names, "" when none or unknown */
	bool exited;
	bool closed;		/* exited, and its last interval shown: nothing more to compute */
	double closed_s;	/* run time when it closed */
	bool seen;		/* present in the latest drain */
	__u64 unseen_ns;	/* absent from the drains since (CLOCK_MONOTONIC), 0: seen */
	bool active;		/* iterated during the last interval, or is stuck */
	__u64 busy_now_ns;	/* inside a busy period this long right now (0: waiting) */
	/*
	 * Its run_delay as the latest snapshot was read, for a busy period of
	 * at least stuck_ns: the kernel counts an iteration's wait for a CPU
	 * only at its end, a live report from this (struct stuck_report).
	 */
	bool run_delay_known;
	__u64 run_delay_ns;
	struct lw_loop snap;	/* latest cumulative counters from the kernel */
	struct lw_loop prev;	/* the snapshot at the previous interval's end */
	/*
	 * The time the thread was watched, up to the latest snapshot: its busy
	 * and waiting time, with the wait under way (never going back), the T
	 * of arrival-weighted lag; and its value at the previous interval's end.
	 */
	__u64 span_ns;
	__u64 prev_span_ns;
	__u64 over_ns;		/* the stall threshold (struct arrival_lag) */
	struct loop_view interval;
	struct loop_thread *hash_next;
};

/* Blocked time of one syscall in one process (kernel-aggregated). */
struct syscall_agg {
	__u32 pid;
	char comm[LW_COMM_LEN];
	char name[REPORT_NAME_LEN];
	__u64 count;
	__u64 total_ns;
	struct lag_summary lat;
};

/* Calls of one probe in one process (kernel-aggregated). */
struct probe_agg {
	__u32 pid;
	char comm[LW_COMM_LEN];
	char label[REPORT_LABEL_LEN];
	__u64 calls;
	__u64 total_ns;
	__u64 busy_ns;		/* inside loop busy periods */
	double busy_share;	/* busy_ns / the process's loop busy time */
	struct lag_summary lat;
};

/* Where a drain gets its numbers and names (kernel/ and tracker/ behind it). */
struct model_source {
	void *ctx;
	/* every loop record, then the exited ones reaped */
	int (*loops)(void *ctx, void (*fn)(const struct lw_loop *loop, void *arg), void *arg);
	int (*syscalls)(void *ctx,
			void (*fn)(const struct lw_syscall_key *key,
				   const struct lw_syscall_stats *st, void *arg),
			void *arg);
	int (*probes)(void *ctx,
		      void (*fn)(const struct lw_probe_key *key, const struct lw_probe_stats *st,
				 void *arg),
		      void *arg);
	/* the kernel side's self counters */
	void (*counters)(void *ctx, __u64 sums[LW_CTR_MAX]);
	void (*probe_label)(void *ctx, __u32 id, char *buf, size_t len);
	/*
	 * a live thread's wait for a CPU so far (the scheduler's run_delay, the
	 * count the kernel's record started its iteration from); false when gone
	 */
	bool (*run_delay)(void *ctx, __u32 pid, __u32 tid, __u64 *ns);
	/* a live thread's process and thread names (LW_COMM_LEN); false when gone */
	bool (*names)(void *ctx, __u32 pid, __u32 tid, char *comm, char *thread);
	/* the name a process was started as (its argv[0]: shown, never an identity) */
	void (*started_as)(void *ctx, __u32 pid, char *buf, size_t len);
	/*
	 * a process's executable and cgroup path, "" when unknown, and the
	 * service identity of the whole path (which the label may cut short)
	 */
	void (*facts)(void *ctx, __u32 pid, char *exe, size_t exe_len, char *cgroup,
		      size_t cgroup_len, struct cgroup_identity *cg);
	/* the Kubernetes names of the pod container an identity names, "" when none */
	void (*k8s_names)(void *ctx, const struct cgroup_identity *cg, struct k8s_names *out);
};

/* what model__drain reads */
enum model_drain {
	MODEL_LOOPS = 1 << 0,		/* the loop records */
	MODEL_AGGREGATES = 1 << 1,	/* per-(process, syscall/probe) aggregates, counters */
};

struct model {
	struct probe_agg *probes;	/* latest drain, largest share of busy time first */
	size_t nprobes;
	struct syscall_agg *syscalls;	/* latest drain, most blocked time first */
	size_t nsyscalls;
	struct loop_thread **hash;
	struct loop_thread **threads;
	size_t nthreads;
	size_t cap;
	double interval_s;	/* length of the last interval */
	__u64 stuck_ns;		/* a busy period this long, not yet ended, is shown */
	struct offender *offenders;	/* whole run */
	size_t noffenders;
	size_t offenders_cap;
	struct {
		double ts;
		size_t offender;
		__u64 ns;
		enum stall_cause cause;
	} recent[MODEL_RECENT_STALLS];	/* a ring of the latest stalls */
	size_t nrecent;
	double run_s;		/* time since tracing started */
	__u64 kcounters[LW_CTR_MAX];	/* kernel self counters, at the last drain */
	__u64 events_dropped;	/* of them, by name: */
	__u64 loops_full;	/* loop threads not tracked: LW_MAX_LOOPS records alive */
	__u64 switch_ins_missed;	/* off-CPU periods whose switch-in was never seen */
	__u64 loops_refused;	/* loop threads not tracked: the kernel refused the record */
	struct attribution *attr;	/* stall time by function (attribution.c) */
	__u64 exited_forgotten;	/* exited threads let go to stay bounded (not in the summary) */
	double keep_exited_s;	/* an exited thread stays at least this long (outputs fold it) */
	__u64 gone_checked_ns;	/* when threads absent from the kernel's table were last looked for */
	__u64 interval_dropped;	/* events lost to a full ring buffer in the last interval */
	__u64 dropped_at_interval;	/* events_dropped when the last interval closed */
	struct lw_hist scratch;	/* one interval's histogram, while it is computed */
	struct lw_hist_sums scratch_sums;	/* and its bucket sums */
	const struct model_source *src;	/* of the drain under way */
};

/*
 * stuck_ns: a busy period this long, not yet ended, keeps its thread shown;
 * the stall threshold, whose share of the time arrival_lag.over_share says
 */
struct model *model__new(__u64 stuck_ns);
void model__free(struct model *m);
/*
 * Exited threads stay at least seconds after their last interval, for the
 * outputs that read them at their own pace (a metrics file every 15 s).
 */
void model__keep_exited(struct model *m, double seconds);
/* Read what `what` says (enum model_drain) from src: the latest numbers. */
void model__drain(struct model *m, const struct model_source *src, unsigned int what);
/* Close the interval: per-thread deltas and percentiles since the last close. */
void model__end_interval(struct model *m, double interval_s, double run_s);
/* Forget a thread (and what it counted): the model stays bounded. */
void model__forget(struct model *m, struct loop_thread *t);
/* totals since loopwatch started watching the thread */
void loop_thread__summary(const struct loop_thread *t, struct loop_view *out);
/*
 * Threads in the order a reader wants them, worst arrival-weighted p99 first
 * (of the interval, or of the whole run when summary is set). Returns a
 * malloc'ed array.
 */
struct loop_thread **model__sorted(const struct model *m, bool summary, size_t *n);
void model__add_stall(struct model *m, const struct stall_report *r);
/*
 * Offenders over stalls since since_ts (0: the whole run), most total stall
 * time first. Returns a malloc'ed array.
 */
struct offender *model__offenders(const struct model *m, double since_ts, size_t *n);
enum stall_cause offender__cause(const struct offender *o);
/* Loop busy time of pid's threads: over the run, or in the last interval. */
__u64 model__process_busy_ns(const struct model *m, __u32 pid, bool interval);
double loop_view__utilization(const struct loop_view *v);

#endif
