/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Stalls and blocking calls as the model and the sinks see them: kernel
 * events with their stacks symbolized and their numbers in plain units.
 */
#ifndef LOOPWATCH_MODEL_REPORT_H
#define LOOPWATCH_MODEL_REPORT_H

#include <stdbool.h>
#include "lib/cpulimit.h"
#include "lib/lwtypes.h"
#include "lib/frame.h"

#define REPORT_NAME_LEN 32
#define REPORT_MAX_STACKS (LW_ITER_SAMPLES + LW_ITER_BLOCKS)

enum stall_cause { CAUSE_CPU, CAUSE_BLOCKED, CAUSE_RUNQ };

struct stack_report {
	int samples;		/* CPU samples with this stack; 0 for a blocking call */
	__u64 sample_us;	/* the CPU time they stand for: each its interval (weights) */
	bool blocked;		/* a blocking call's stack (else CPU samples) */
	bool runq;		/* where it was preempted, waiting for a CPU */
	bool gil;		/* another thread's, holding the GIL the loop waited for */
	char syscall[REPORT_NAME_LEN];
	__u64 ns;		/* blocked time of the call */
	int nframes;
	struct frame *frames;	/* kernel frames first, then user, leaf to root */
};

struct syscall_report {
	char name[REPORT_NAME_LEN];
	__u32 count;
	__u64 ns;
};

#define REPORT_LABEL_LEN 64

struct probe_time {
	char label[REPORT_LABEL_LEN];
	__u32 count;
	__u64 ns;
};

/* A probed call over --probe-threshold. */
struct probe_report {
	double ts;
	__u32 pid;
	__u32 tid;
	char comm[LW_COMM_LEN];
	char label[REPORT_LABEL_LEN];
	__u64 duration_ns;
	struct stack_report stack;	/* of the caller, at the return */
};

/* A task that had the CPU while the loop thread waited for it, or that woke it. */
struct neighbour_report {
	__u32 tid;
	__u32 pid;
	char comm[LW_COMM_LEN];	/* its thread's name */
	__u64 ns;
	char top[192];		/* a waker: where it woke the loop, from its user stack; "" */
};

/*
 * A thread of the loop's process that held the GIL while the loop thread
 * waited for it: its share of gil_ns by the CPU samples that found it
 * holding it, and where it held it.
 */
struct gil_holder_report {
	__u32 tid;
	__u32 samples;
	char comm[LW_COMM_LEN];	/* its thread's name */
	__u64 ns;
	int stack;		/* its stack in stacks[] (gil set); -1: not walked */
};

struct stall_report {
	double ts;		/* unix seconds at the start of the iteration */
	__u32 pid;
	__u32 tid;
	char comm[LW_COMM_LEN];
	char thread[LW_COMM_LEN];
	__u64 duration_ns;
	__u64 oncpu_ns;
	__u64 blocked_ns;
	__u64 runq_ns;
	enum stall_cause cause;	/* the largest of the three */
	int nsyscalls;
	struct syscall_report syscalls[LW_ITER_SYSCALLS];
	int nstacks;
	struct stack_report stacks[REPORT_MAX_STACKS];
	char top[256];		/* the frames that best name the culprit */
	int nprobes;
	struct probe_time probes[LW_ITER_PROBES];	/* probed calls inside the stall */
	__u64 throttled_ns;	/* of runq_ns: its cgroup's CPU quota had run out */
	struct cpu_limit limit;	/* that quota (limit.known: read), filled by the tracker */
	int nneighbours;	/* who had the CPU while it waited, longest first */
	struct neighbour_report neighbours[LW_ITER_NEIGHBOURS];
	/* who woke it from its sleeps, longest sleeps first (tid 0: an interrupt) */
	int nwakers;
	struct neighbour_report wakers[LW_ITER_WAKERS];
	/* the longest blocking call reported inside it, when its fd was named (events.c) */
	struct {
		char syscall[REPORT_NAME_LEN];
		char path[256];
	} peer;
	/* asleep waiting for the GIL (not in blocked_ns), and who held it, most first */
	__u64 gil_ns;
	int ngil_holders;
	struct gil_holder_report gil_holders[LW_ITER_GIL_HOLDERS];
};

struct block_report {
	double ts;
	__u32 pid;
	__u32 tid;
	char comm[LW_COMM_LEN];
	char syscall[REPORT_NAME_LEN];
	__u64 duration_ns;
	__u32 sleeps;
	int fd;			/* -1 when the first argument is no fd */
	char path[256];		/* "" when unresolved; a socket's peer ("tcp 10.0.0.5:5432") */
	__u32 wait_nfds;	/* a nested wait call: fds it waited on; 0: no wait call */
	int wait_fds[LW_WAIT_FDS];	/* the first of them, -1 past wait_nfds */
	struct stack_report stack;
};

/*
 * A loop inside one iteration for longer than --stuck-after, not ended yet:
 * the iteration so far as a stall (samples, blocking calls), and the call
 * it is asleep in now, if any.
 */
struct stuck_report {
	double now_ts;		/* unix seconds when this was seen; so_far.ts: the start */
	int nth;		/* 1 for the first report of this iteration, then 2, 3... */
	bool in_call;		/* asleep in a syscall right now: call */
	struct stall_report so_far;	/* duration_ns: the iteration's age */
	struct block_report call;	/* duration_ns: asleep in it this long */
};

const char *stall_cause__name(enum stall_cause c);
/* The largest of the three: on CPU, blocked, waiting for a CPU. */
enum stall_cause stall_cause__of(__u64 oncpu_ns, __u64 blocked_ns, __u64 runq_ns);
void stack_report__clear(struct stack_report *s);

/* What a CPU sample stack weighs: the CPU time its samples stand for, else their count. */
static inline __u64 stack_report__sample_weight(const struct stack_report *s)
{
	return s->sample_us ? s->sample_us : (__u64)(s->samples > 0 ? s->samples : 0);
}
/*
 * The frame that names the culprit of one stack: the user's Python code when
 * there is any, else the first native frame outside libc and the loader;
 * -1 when none (culprit.c).
 */
int stack_report__culprit(const struct stack_report *s);
/*
 * The function a culprit line names first, without its line: "render
 * (app.py:28) < handle (app.py:46)" is "render (app.py)", the identity stalls
 * are counted by in the offenders table.
 */
void culprit__function(const char *top, char *buf, size_t len);
/*
 * A culprit line without the call it slept in and for how long ("f (a.py:3)
 * ... recv 60.0 ms tcp 10.0.0.5:80" is "f (a.py:3)"): what a table of many
 * stalls of one culprit shows.
 */
void culprit__without_call(const char *top, char *buf, size_t len);
/* --innermost-culprits: the innermost named frame, whoever's code it is */
void culprit__innermost(bool on);
/* The frames that best name a culprit in one stack: the user's code first (culprit.c). */
void stack_report__top(const struct stack_report *s, char *buf, size_t len);
/*
 * The top frames most of the stall's dominant cause names, or first the
 * CPU quota that throttled it when that took most of it (culprit.c).
 */
void stall_report__top(const struct stall_report *r, char *buf, size_t len);
void stall_report__free(struct stall_report *r);
void block_report__free(struct block_report *r);
void probe_report__free(struct probe_report *r);
void stuck_report__free(struct stuck_report *r);

#endif
