/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The collector owns the BPF skeleton's life (open -> rodata -> load ->
 * attach -> poll -> destroy) and drains its maps; it knows nothing of output.
 */
#ifndef LOOPWATCH_KERNEL_COLLECTOR_H
#define LOOPWATCH_KERNEL_COLLECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "lib/lwtypes.h"
#include "lw_abi_unwind.h"

/*
 * perf's cpu-clock rate where the tick cannot be had, and the boost's period:
 * a prime, so that sampling does not run in lockstep with timers at round rates
 */
#define COLLECTOR_SAMPLE_HZ 997

typedef void (*loop_fn)(const struct lw_loop *loop, void *ctx);
/* a stall or blocking-call event from the ring buffer (struct lw_*_event) */
typedef void (*event_fn)(const void *event, size_t size, void *ctx);

struct collector_opts {
	const int *pids;
	int npids;
	const char (*comms)[LW_COMM_LEN];	/* with the pids: none of both, every process */
	int ncomms;
	const __u64 *cgroup_ids;	/* --cgroup/--service: these and what is under them */
	const __u32 *cgroup_levels;
	int ncgroups;
	const char (*excludes)[LW_COMM_LEN];	/* without pids and comms: never these */
	int nexcludes;
	bool verbose;
	__u64 stall_threshold_ns;
	__u64 slow_threshold_ns;	/* iterations sent up: <= stall_threshold_ns */
	__u64 block_threshold_ns;
	int sample_hz;		/* perf's cpu-clock at this rate; 0: the tick's samples */
	bool no_nested_waits;	/* every wait call ends an iteration */
	__u64 probe_threshold_ns;
	/* unwind table capacity, in rows (and page-index entries); 0: frame pointers only */
	size_t unwind_rows;
	size_t unwind_pages;
	__u32 ring_bytes;	/* the ring buffer's size: a power of two of pages */
	event_fn on_event;
	void *ctx;
};

struct collector;
struct bpf_link;
struct uprobe_progs;

/* NULL on failure, with a one-line reason in err. */
struct collector *collector__open(const struct collector_opts *opts, char *err, size_t errlen);
void collector__destroy(struct collector *c);
/*
 * Fork a child that holds every open BPF link until this process exits and
 * then releases them in the background: the closes that follow, here and
 * by the probes, return at once instead of waiting a grace period each.
 */
void collector__hand_off(void);
/* Which hooks the wait and flush calls are seen by, and why not fentry (no newline). */
const char *collector__hooks(const struct collector *c);
/* A line (newline-ended) for each feature this kernel lacks and how it is done without, or "". */
const char *collector__fallbacks(const struct collector *c);
/* A descriptor that polls readable when kernel events wait in the ring buffer. */
int collector__fd(const struct collector *c);
/* Hand every waiting event to on_event; 0 or -errno. */
int collector__consume(struct collector *c);
/* The probe programs, to attach uprobes with (kernel/uprobes.h). */
void collector__uprobe_progs(const struct collector *c, struct uprobe_progs *p);
/* Kernel stack ips by id from the kernel's stack map; returns the depth, 0 if gone. */
int collector__read_stack(struct collector *c, __s32 id, uint64_t *ips, int max);
/* An unwound user stack by id from "user_stacks"; false if gone (or id 0). */
bool collector__read_user_stack(struct collector *c, __u32 id, struct lw_user_stack *st);
/* What the unwind tables hold, in rows and page-index entries (0: none). */
void collector__unwind_capacity(const struct collector *c, size_t *rows, size_t *pages);
/* n rows at row index at, n page-index entries at index at; -ERANGE outside. */
int collector__write_unwind_rows(struct collector *c, size_t at, const struct lw_uw_row *rows,
				 size_t n);
int collector__write_unwind_pages(struct collector *c, size_t at, const struct lw_uw_page *pages,
				  size_t n);
/* Unwind pid with the mapping table in slot (< LW_UW_MAX_PROCS); NULL proc: no more. */
int collector__set_unwind(struct collector *c, __u32 pid, __u32 slot,
			  const struct lw_uw_proc *proc);
/*
 * A runtime's walked stack by id from its map (userspace/runtimes/: its
 * stacks_map, size bytes a value); false if gone, id 0, or not such a map.
 */
bool collector__read_runtime_stack(struct collector *c, const char *map, __u32 id, void *st,
				   size_t size);
/* A runtime's walker reads pid's layout from map from now on; NULL layout: no more. */
int collector__set_runtime(struct collector *c, const char *map, __u32 pid, const void *layout,
			   size_t size);
/*
 * Kernel-side self counters (events dropped, loop map full, switch-ins missed,
 * loop records the kernel refused), summed over CPUs.
 */
void collector__counters(struct collector *c, __u64 sums[LW_CTR_MAX]);
typedef void (*syscall_fn)(const struct lw_syscall_key *key, const struct lw_syscall_stats *st,
			   void *ctx);
/* Every (process, blocked syscall) aggregate. */
int collector__drain_syscalls(struct collector *c, syscall_fn fn, void *ctx);
typedef void (*probe_fn)(const struct lw_probe_key *key, const struct lw_probe_stats *st,
			 void *ctx);
/* Every (process, probe) aggregate. */
int collector__drain_probes(struct collector *c, probe_fn fn, void *ctx);
/* Every live loop record, then those of threads that exited (reaped once read). */
int collector__drain_loops(struct collector *c, loop_fn fn, void *ctx);

#endif
