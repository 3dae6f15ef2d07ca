/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Where stall time went, per function. Every stall's time is shared among
 * all the stacks it holds (CPU samples, blocking calls, the longest wait for
 * a CPU), so that the shares add up to the stall; each share is then charged
 * to functions: its self time to the frame that names the culprit (the
 * user's code: the kernel, libc and the Python stdlib are charged to their
 * caller, culprit.c), its inclusive time to every function on the stack.
 * Per process, by cause, over the run and per interval. Stall time only:
 * iterations under --threshold carry no stacks.
 */
#ifndef LOOPWATCH_MODEL_ATTRIBUTION_H
#define LOOPWATCH_MODEL_ATTRIBUTION_H

#include <stdbool.h>
#include <stddef.h>
#include "model/report.h"

/* One part of a stall's time: on one stack (or none known), for one cause. */
struct stack_share {
	int stack;		/* index in the report's stacks; -1: no stack */
	enum stall_cause cause;
	__u64 ns;
};

#define STALL_SHARES_MAX (2 * REPORT_MAX_STACKS + 4)

/*
 * The stall's duration split into shares that add up to it:
 * - on-CPU time over the CPU sample stacks, by their samples;
 * - blocked time over the blocking calls, by their durations; what a call
 *   took beyond its share of blocked time (its wait for a CPU after the
 *   wake-up) is run-queue time of the same stack;
 * - the longest wait for a CPU on the stack it was preempted at, the rest of
 *   the run-queue time over the CPU samples (preemption strikes where the
 *   thread runs).
 * Time no stack explains has stack -1. Returns the number of shares.
 */
int stall_report__shares(const struct stall_report *r, struct stack_share *out);
/* The name of time no stack explains, by cause: "[cpu: no sample]" ... */
const char *stall_cause__unknown(enum stall_cause c);

#define FUNC_NAME_LEN 128
#define FUNC_WHERE_LEN 160
#define FUNC_VIA_LEN 96

/* ns by enum stall_cause */
struct func_times {
	__u64 self_ns[3];
	__u64 incl_ns[3];
};

/* One function of one process. */
struct func_stat {
	__u32 pid;
	char comm[LW_COMM_LEN];
	enum frame_kind kind;
	char func[FUNC_NAME_LEN];	/* "[cpu: no sample]"... for time with no stack */
	char where[FUNC_WHERE_LEN];	/* module (native), file (Python) */
	int line;		/* Python: the line of its largest self share */
	__u64 line_ns;
	struct func_times run;
	struct func_times interval;	/* the last closed interval */
	struct func_times cur;		/* the interval under way */
	__u64 stalls;		/* stalls it had self time in */
	char via[FUNC_VIA_LEN];	/* what its self time was mostly spent in (a callee, a syscall) */
	__u64 via_ns;
	/* private */
	__u64 last_stall;
	struct func_stat *hash_next;
};

/* A process's stalls, the whole of what its functions share. */
struct attr_proc {
	__u32 pid;
	char comm[LW_COMM_LEN];
	__u64 stalls;
	__u64 stall_ns[3];	/* run, by cause */
	__u64 interval_ns[3];	/* the last closed interval */
	__u64 cur_ns[3];
};

enum func_sort { FUNC_SORT_SELF, FUNC_SORT_INCL, FUNC_SORT_CPU, FUNC_SORT_BLOCKED,
		 FUNC_SORT_RUNQ, FUNC_SORT_MAX };

struct attribution;

struct attribution *attribution__new(void);
void attribution__free(struct attribution *a);
void attribution__add_stall(struct attribution *a, const struct stall_report *r);
/* The interval under way becomes the last closed one. */
void attribution__end_interval(struct attribution *a);
/*
 * Functions with time in the run (or the last interval), of pid (0: all),
 * largest first by `by`. Returns a malloc'ed array of pointers into a.
 */
const struct func_stat **attribution__sorted(const struct attribution *a, bool interval,
					     enum func_sort by, __u32 pid, size_t *n);
/* The processes that stalled, most stall time first; malloc'ed. */
struct attr_proc *attribution__procs(const struct attribution *a, size_t *n);
/*
 * Of pid's recent stalls at or over min_ns, the share of their time that f
 * had as self time (0..1); *nstalls: how many such stalls were kept.
 */
double attribution__tail_share(const struct attribution *a, const struct func_stat *f,
			       __u64 min_ns, size_t *nstalls);
/* Time that found no room in the bounded table of functions. */
__u64 attribution__overflow_ns(const struct attribution *a);
/* The one-line name of a function: "func (file:line)", "func" (native). */
void func_stat__name(const struct func_stat *f, char *buf, size_t len);
const char *func_sort__name(enum func_sort by);
__u64 func_times__self(const struct func_times *t);
__u64 func_times__incl(const struct func_times *t);
__u64 func_times__key(const struct func_times *t, enum func_sort by);

#endif
