/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Maps shared by the BPF program files. They are linked into one object by
 * `bpftool gen object`; __weak lets every file that includes this header
 * declare the same map and the linker keep a single copy.
 */
#ifndef LOOPWATCH_MAPS_BPF_H
#define LOOPWATCH_MAPS_BPF_H

#include "lw_abi.h"
#include "features.bpf.h"

/*
 * 1: the wait and switch hooks keep only loopwatch's timing core -- the
 * record lookups, the clock reads, an iteration's length into its histogram
 * and the waits for a CPU summed -- and none of what names a culprit. Built
 * only by `make bench` (build/bench/timing): the least loopwatch's way of
 * finding and timing loop threads costs, set beside all of it
 * (tools/bench/contended.py).
 */
#ifndef LW_TIMING_ONLY
#define LW_TIMING_ONLY 0
#endif

/*
 * A struct lw_loop up to LW_LOOP_LIVE_SIZE, as the maps hold it: the
 * programs use it as a struct lw_loop, and the verifier refuses at load any
 * access past it (the histogram's tail is in "loop_hists").
 */
struct lw_loop_live {
	__u8 head[LW_LOOP_LIVE_SIZE];
};

/*
 * Loop threads: the record lives in the thread's own task storage. Finding
 * it is a pointer walk from the task (no hashing, no shared buckets: ~3 ns
 * against ~12 for the LRU hash it replaced), and a task that is no loop
 * thread has none -- two pointer loads -- which is what makes the scheduler
 * and sampling programs nearly free for everybody else. Created zeroed by
 * the first wait call, freed with the task; at most LW_MAX_LOOPS at once
 * (loop.bpf.c counts them). Kernels since 6.19 create no value over 8 KiB
 * (bpf/lw_abi.h, LW_TASK_STORAGE_MAX): the record stops before that.
 */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct lw_loop_live);
} loops SEC(".maps") __weak;

/*
 * The tail of each loop thread's histogram, by tid: created with its record,
 * touched only by iterations too long for the buckets in task storage. An
 * exited thread's stays until userspace has read it with its "loops_final"
 * entry: room for as many of those as of live ones.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 2 * LW_MAX_LOOPS);
	__type(key, __u32);
	__type(value, struct lw_hist_tail);
} loop_hists SEC(".maps") __weak;

/* Never written: what a new tail starts from, and stands for a missing one. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lw_hist_tail);
} hist_zero SEC(".maps") __weak;

/*
 * The last state of exited loop threads, by tid, until userspace has read
 * it: the task storage goes with the task. Allocated as used.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, LW_MAX_LOOPS);
	__type(key, __u32);
	__type(value, struct lw_loop_live);
} loops_final SEC(".maps") __weak;

/* Processes named by -p, filled by userspace before attach. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, LW_MAX_PIDS);
	__type(key, __u32);
	__type(value, __u8);
} pid_filter SEC(".maps") __weak;

static __always_inline struct lw_loop *loop__of(struct task_struct *task)
{
	/*
	 * Nearly every task has no BPF task storage at all: one load tells, and
	 * the helper call (its recursion guard, the storage's cache lookup) is
	 * left to the few that do. Every context switch, return to user mode
	 * and wait call of the machine asks this.
	 */
	if (!task->bpf_storage)
		return NULL;
	return bpf_task_storage_get(&loops, task, NULL, 0);
}

/*
 * What the scheduler's hooks need to know of a tid before they look at its
 * task storage, a byte each (enum loop_tid_bits): every tid the kernel can
 * give (PID_MAX_LIMIT, 4M on 64-bit: 4 MiB), 64 to an entry. An array
 * lookup is inlined by the verifier, where bpf_task_storage_get() is a helper
 * call, and reading a loop record on the waker's CPU a miss on a line its
 * thread keeps on another: every context switch of a task with any task
 * storage paid the call (on a saturated memcached, the load generator's
 * threads, remembered as call-style waiters), every wake-up of a loop thread
 * from its wait the miss. Written only as a record is made, as its thread
 * exits, and as it goes to sleep inside an iteration and runs again (rare
 * beside the wake-ups from its wait): the lines stay clean in every CPU's
 * cache. The wait calls' hooks do not read it: there a miss on it cost more
 * than the helper call it saved. A bit is set before the state it stands
 * for and cleared after: a set bit is at worst stale (a lookup more), never
 * missing.
 */
#define LW_LOOP_TIDS_PER_ENTRY 64

enum loop_tid_bits {
	LOOP_TID_RECORD = 1,	/* it has a loop record */
	LOOP_TID_ASLEEP = 2,	/* asleep inside an iteration: its wake-up is looked at */
};

struct loop_tids_entry {
	__u8 tid[LW_LOOP_TIDS_PER_ENTRY];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, (4U << 20) / LW_LOOP_TIDS_PER_ENTRY);
	__type(key, __u32);
	__type(value, struct loop_tids_entry);
} loop_tids SEC(".maps") __weak;

static __always_inline __u8 *loop_tid__byte(__u32 tid)
{
	__u32 key = tid / LW_LOOP_TIDS_PER_ENTRY;
	struct loop_tids_entry *e = bpf_map_lookup_elem(&loop_tids, &key);

	return e ? &e->tid[tid % LW_LOOP_TIDS_PER_ENTRY] : NULL;
}

/* written only where it changes: a store would take the line from the other CPUs */
static __always_inline void loop_tid__set(__u32 tid, __u8 bits)
{
	__u8 *b = loop_tid__byte(tid);

	if (b && (*b & bits) != bits)
		*b |= bits;
}

static __always_inline void loop_tid__clear(__u32 tid, __u8 bits)
{
	__u8 *b = loop_tid__byte(tid);

	if (b && (*b & bits))
		*b &= ~bits;
}

/*
 * loop__of() for the scheduler's hooks, if the tid's byte has any of bits; a
 * task with no task storage at all is told by its own pointer first, without
 * a read of the table.
 */
static __always_inline struct lw_loop *loop__of_marked(struct task_struct *task, __u8 bits)
{
	__u8 *b;

	if (!task->bpf_storage)
		return NULL;
	/* a tid past the table's is looked up */
	b = loop_tid__byte(task->pid);
	if (b && !(*b & bits))
		return NULL;
	return loop__of(task);
}

static __always_inline struct lw_loop *loop__current(void)
{
	return loop__of(bpf_get_current_task_btf());
}

#define LW_MAX_SYSCALL_STATS 1024

/* LRU: processes come and go; the oldest (process, syscall) pairs make room. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, LW_MAX_SYSCALL_STATS);
	__type(key, struct lw_syscall_key);
	__type(value, struct lw_syscall_stats);
} syscall_stats SEC(".maps") __weak;

/* Never written: the zeroed value new syscall_stats entries start from. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lw_syscall_stats);
} syscall_zero SEC(".maps") __weak;

/*
 * User and kernel stacks of samples and blocking calls, deduplicated by hash.
 * Never cleared: ids are taken with BPF_F_REUSE_STACKID, so a new stack
 * replaces the old one in its bucket instead of failing once the map has
 * filled; an event is read within milliseconds, long before that matters.
 */
struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__uint(value_size, LW_STACK_DEPTH * sizeof(__u64));
} stacks SEC(".maps") __weak;

/* Only what crosses a threshold: stalls and blocking calls. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} events SEC(".maps") __weak;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LW_CTR_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps") __weak;

/*
 * Who runs on a CPU while a loop thread waits for it: one table per CPU,
 * taken by the first loop thread preempted there inside an iteration and
 * given back when it runs again (bpf/iteration.bpf.h). Every context switch
 * of the machine looks at its CPU's waiter; only while there is one does it
 * read the clock and charge the task that leaves.
 */
#define LW_CPU_NEIGHBOURS 8
/* a waiter this old is gone (exited, or its switch-in went unseen): the table is free */
#define LW_CPU_WAIT_MAX_NS 2000000000ULL

struct lw_cpu_wait {
	__u32 tid;		/* the waiting loop thread; 0: none */
	__u32 n;
	__u64 start_ns;
	__u64 last_ns;		/* the latest switch on this CPU since */
	struct lw_neighbour top[LW_CPU_NEIGHBOURS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lw_cpu_wait);
} cpu_waits SEC(".maps") __weak;

/*
 * The same tables by CPU, on a kernel that cannot look up another CPU's
 * slot of cpu_waits (before 5.19): sized to the possible CPUs by userspace
 * then, to 1 otherwise.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lw_cpu_wait);
} cpu_waits_shared SEC(".maps") __weak;

/* This CPU's table. */
static __always_inline struct lw_cpu_wait *cpu_wait__here(void)
{
	__u32 key = 0;

	if (have_percpu_lookup)
		return bpf_map_lookup_elem(&cpu_waits, &key);
	key = bpf_get_smp_processor_id();
	return bpf_map_lookup_elem(&cpu_waits_shared, &key);
}

/* CPU cpu's table. */
static __always_inline struct lw_cpu_wait *cpu_wait__on(__u32 cpu)
{
	__u32 zero = 0;

	if (have_percpu_lookup)
		return bpf_map_lookup_percpu_elem(&cpu_waits, &zero, cpu);
	return bpf_map_lookup_elem(&cpu_waits_shared, &cpu);
}

/* Options, set by userspace before load. */
const volatile __u64 stall_threshold_ns __weak = 10000000;
/* slow iterations reported to userspace: lower than a stall when alerts want it */
const volatile __u64 slow_threshold_ns __weak = 10000000;
const volatile __u64 block_threshold_ns __weak = 1000000;
/*
 * CPU samples take stacks only once the iteration is this old: a stack walk
 * costs microseconds, and most iterations end long before. Userspace sets
 * 1/16 of the slow threshold (625 us at the default 10 ms): an iteration
 * that reaches the threshold on CPU has ~9 samples at 997 Hz, and leaving
 * its first 1/16 unsampled moves per-function attribution by a few percent
 * at most (a quarter of the threshold moved it by 10-27 %).
 */
const volatile __u64 sample_gate_ns __weak = 625000;

#endif /* LOOPWATCH_MAPS_BPF_H */
