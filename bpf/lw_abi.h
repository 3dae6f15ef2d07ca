/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Everything that crosses between the BPF programs and userspace: the
 * per-thread loop record, the events sent through the ring buffer and the
 * histogram bucket math. Both sides include this file; keep it free of
 * anything only one side can compile.
 */
#ifndef LW_ABI_H
#define LW_ABI_H

#define LW_COMM_LEN 16
#define LW_MAX_LOOPS 4096	/* loop threads tracked at once */
#define LW_MAX_PIDS 1024	/* -p filter entries */
#define LW_MAX_COMMS 16		/* --comm names */
#define LW_MAX_CGROUPS 8	/* --cgroup and --service */

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

/*
 * The sum of the values that fell in each bucket of a struct lw_hist. With
 * the counts, sum_{d > x} (d - x) -- how long an event arriving at a random
 * moment waits, summed (userspace/lib/arrival.h) -- is exact at every bucket
 * bound, where the counts alone know each value only to half a bucket.
 */
struct lw_hist_sums {
	__u64 ns[LW_HIST_BUCKETS];
};

/* What one iteration keeps as evidence, bounded so the record stays fixed-size. */
#define LW_ITER_SAMPLES 32	/* CPU samples kept per iteration (a reservoir) */
#define LW_ITER_SYSCALLS 8	/* distinct blocking syscalls per iteration */
#define LW_ITER_BLOCKS 8	/* blocking calls with their stacks per iteration */
#define LW_ITER_NEIGHBOURS 4	/* tasks that had the CPU while it waited, the longest */
#define LW_ITER_WAKERS 4	/* tasks that woke it from its sleeps, the longest sleeps */
#define LW_ITER_GIL_HOLDERS 4	/* Python threads that held the GIL while it waited for it */
/* a waker's tid when an interrupt woke it (a timer, a device): no task did */
#define LW_WAKER_INTERRUPT 0
#define LW_STACK_DEPTH 64
/*
 * Words at the top of the user stack, saved with each blocking stack: the
 * frame-pointer walk skips the caller of a libc function built without
 * frame pointers, and its return address is among these words.
 */
#define LW_STACK_WORDS 32
#define LW_PATH_PARTS 6		/* dentry names, leaf first */
#define LW_PATH_PART_LEN 40
/* orig_ax when the task sleeps outside a syscall: a page fault */
#define LW_NR_NONE -1
#define LW_WAIT_FDS 4		/* fds of a nested wait call kept with it */
#define LW_UNIX_PATH_LEN 128	/* sun_path (108), rounded up to a power of two */

enum lw_event_type {
	LW_EV_STALL = 1,
	LW_EV_BLOCK = 2,
	LW_EV_NEW_LOOP = 3,	/* a thread's first wait: read its process's maps now */
	LW_EV_PROBE = 4,	/* a probed call over --probe-threshold */
};

struct lw_new_loop_event {
	__u32 type;
	__u32 pid;
	__u32 tid;
	__u32 pad;
};

/*
 * The runtimes whose frames BPF walks (bpf/runtimes/runtimes.bpf.h): each
 * keeps the stacks it walked in a map of its own, by id.
 */
enum lw_runtime {
	LW_RT_PYTHON,		/* "py_stacks": bpf/runtimes/python/lw_abi_python.h */
	LW_RT_V8,		/* "v8_stacks": bpf/runtimes/v8/lw_abi_v8.h */
	LW_RT_N,
};

/* ids of one capture's stacks */
struct lw_stack_ref {
	__u32 user;		/* id in "user_stacks" (bpf/lw_abi_unwind.h); 0: not captured */
	__s32 kernel;		/* id in the "stacks" stack map; negative: not captured */
	__u32 rt[LW_RT_N];	/* id in each runtime's stack map; 0: none walked */
};

/* A stack taken while the task was about to leave the CPU. */
struct lw_capture {
	struct lw_stack_ref stack;
	__u64 words[LW_STACK_WORDS];	/* from the user stack pointer up */
};

/*
 * words[0] of a capture whose stack was taken elsewhere (a CPU sample's): its
 * other words are stale, and marking them so is one store where clearing
 * them was 32, at an iteration's first preemption.
 */
#define LW_WORDS_NONE (~0ULL)

/* Time an instrumented function (probe) took inside one iteration. */
#define LW_ITER_PROBES 4
#define LW_MAX_PROBES 256	/* probe ids: the bpf_cookie of each attached uprobe */

struct lw_probe_sum {
	__u32 id;
	__u32 count;
	__u64 ns;
};

struct lw_syscall_sum {
	__s32 nr;
	__u32 count;
	__u64 ns;
};

/* A task that ran on the CPU a loop thread waited for, and for how long. */
struct lw_neighbour {
	__u32 tid;
	__u32 pid;
	__u64 ns;
	char comm[LW_COMM_LEN];	/* its thread's name */
	/*
	 * A waker's stacks at the wake-up (its first): the kernel's always
	 * (an interrupt, a timer or a device, runs on whatever task it
	 * interrupted: its frames tell it apart); the user and runtime stacks
	 * only for a sleep that brings its iteration's blocked time to half
	 * the slow threshold (0: none).
	 */
	struct lw_stack_ref stack;
};

/*
 * A thread of the loop's own Python process that CPU samples found holding
 * the GIL while the loop thread slept waiting for it (bpf/runtimes/python/gil.bpf.h).
 */
struct lw_gil_holder {
	__u32 tid;
	__u32 samples;		/* samples that found it holding the GIL */
	char comm[LW_COMM_LEN];	/* its thread's name */
	struct lw_stack_ref stack;	/* walked at its first such sample; user 0: none */
};

struct lw_block_ref {
	struct lw_capture cap;
	__s32 nr;
	__u32 sleeps;
	__u64 ns;
};

/*
 * The evidence gathered during the current iteration; reset when it ends.
 * The counters come first, up to samples (LW_ITER_COUNTERS_SIZE): the end of
 * every iteration resets them at once, and they share one or two cache lines.
 */
struct lw_iter {
	__u64 blocked_ns;	/* off CPU, sleeping */
	__u64 runq_ns;		/* runnable, waiting for a CPU */
	__u64 runq_max_ns;	/* the longest wait for a CPU (where: runq_cap) */
	/*
	 * Of runq_ns, the waits during which the thread's group on its CPU was
	 * throttled by its cgroup's CPU quota: the kernel's own throttled clock
	 * of that run queue (struct cfs_rq), read as the wait began and ended.
	 */
	__u64 throttled_ns;
	/*
	 * Asleep waiting for the GIL of its Python process (a futex inside the
	 * interpreter's struct _gil_runtime_state): not blocked_ns, a part of
	 * its own. Who held it: gil_holders, by CPU samples of the process's
	 * threads taken while it slept (gil_samples of them found a holder).
	 */
	__u64 gil_ns;
	__u32 samples_seen;	/* CPU samples taken; the first LW_ITER_SAMPLES kept, */
	__u32 nsyscalls;	/* then a uniform reservoir of them */
	__u32 nblocks;
	__u32 nprobes;
	__u32 nneighbours;
	__u32 nwakers;
	__u32 ngil_holders;
	__u32 gil_samples;
	struct lw_stack_ref samples[LW_ITER_SAMPLES];
	/*
	 * The CPU time each kept sample stands for, in us: the interval it was
	 * taken at (the tick's, the boost timer's, perf's), less where another
	 * sampler takes over (bpf/sample.bpf.h).
	 */
	__u16 sample_us[LW_ITER_SAMPLES];
	struct lw_syscall_sum syscalls[LW_ITER_SYSCALLS];
	struct lw_block_ref blocks[LW_ITER_BLOCKS];
	struct lw_probe_sum probes[LW_ITER_PROBES];
	struct lw_capture runq_cap;	/* waited there: the first CPU sample after the wait */
	/*
	 * Who had the CPU while it waited after a preemption: the tasks that ran
	 * on the CPU it left until it ran again, the longest kept (the CPU's
	 * own table keeps LW_CPU_NEIGHBOURS, bpf/maps.bpf.h).
	 */
	struct lw_neighbour neighbours[LW_ITER_NEIGHBOURS];
	/*
	 * Who woke it from its sleeps of at least block_threshold_ns: ns is the
	 * sleep each ended, summed per waker (tid LW_WAKER_INTERRUPT: an
	 * interrupt, no task).
	 */
	struct lw_neighbour wakers[LW_ITER_WAKERS];
	struct lw_gil_holder gil_holders[LW_ITER_GIL_HOLDERS];
};

/* the counters an iteration's end resets: everything before its evidence */
#define LW_ITER_COUNTERS_SIZE __builtin_offsetof(struct lw_iter, samples)

/* The other end of a socket, read from the kernel's socket at the first sleep. */
struct lw_sock_peer {
	__u16 family;		/* AF_INET, AF_INET6, AF_UNIX */
	__u16 protocol;		/* IPPROTO_TCP, IPPROTO_UDP...; for AF_UNIX the socket type */
	__u16 port;		/* host order */
	__u8 local;		/* no peer: addr/port/unix_path are this socket's own */
	__u8 unix_len;		/* bytes of unix_path; 0: unnamed */
	__u8 addr[16];		/* IPv4 in the first 4 bytes */
	char unix_path[LW_UNIX_PATH_LEN];	/* sun_path; an abstract name starts with NUL */
};

enum lw_fd_kind {
	LW_FD_NONE = 0,		/* no open file at that number */
	LW_FD_FILE = 1,		/* path: dentry names */
	LW_FD_SOCKET = 2,	/* peer */
	LW_FD_PIPE = 3,		/* inode: "pipe:[ino]" */
	LW_FD_ANON = 4,		/* inode, path[0]: "anon_inode:[eventpoll]" */
};

/* What an fd of a blocking call was at its first sleep. */
struct lw_fd_info {
	__u32 kind;		/* enum lw_fd_kind */
	__u32 pad;
	__u64 inode;
	union {
		char path[LW_PATH_PARTS][LW_PATH_PART_LEN];	/* leaf first */
		struct lw_sock_peer peer;
	};
};

/*
 * The fds a nested wait call waits on: the epoll fd of an epoll wait, the
 * first entries of a poll's array, the lowest fds of a select's sets.
 */
struct lw_wait_fds {
	__u32 nfds;		/* how many it waits on (a poll's nfds); 0: not a wait call */
	__s32 fds[LW_WAIT_FDS];	/* the first of them, -1 past nfds */
};

/*
 * One syscall invocation that slept, seen only at sched_switch: successive
 * sleeps with the same syscall number, first argument and user ip/sp, with
 * little on-CPU time between them, are the same invocation.
 */
struct lw_block {
	__u64 start_ns;		/* first sleep; 0 when no invocation is open */
	__u64 last_in_ns;	/* last time it got the CPU back */
	__u64 arg0;
	__u64 user_ip;
	__u64 user_sp;
	__s32 nr;
	__u32 sleeps;
	struct lw_capture cap;
	struct lw_wait_fds wait;	/* a nested wait call's fds */
	struct lw_fd_info fd;	/* wait.fds[0] for a wait call, else arg0 as an fd, best effort */
};

/* Every blocked syscall invocation of loop threads, per (process, syscall). */
struct lw_syscall_key {
	__u32 pid;
	__s32 nr;
};

struct lw_syscall_stats {
	char comm[LW_COMM_LEN];
	__u64 count;
	__u64 total_ns;
	__u64 max_ns;
	struct lw_hist hist;
};

/* Calls of one probe in one process. */
struct lw_probe_key {
	__u32 pid;
	__u32 id;
};

struct lw_probe_stats {
	char comm[LW_COMM_LEN];
	__u64 calls;
	__u64 total_ns;
	__u64 busy_ns;		/* of it, inside the busy periods of loop threads */
	__u64 max_ns;
	struct lw_hist hist;
};

struct lw_probe_event {
	__u32 type;
	__u32 pid;
	__u32 tid;
	__u32 id;
	__u64 start_ns;		/* CLOCK_MONOTONIC */
	__u64 duration_ns;
	struct lw_capture cap;
	char comm[LW_COMM_LEN];
};

struct lw_stall_event {
	__u32 type;
	__u32 pid;
	__u32 tid;
	__u32 pad;
	__u64 start_ns;		/* CLOCK_MONOTONIC */
	__u64 duration_ns;
	char comm[LW_COMM_LEN];
	char thread[LW_COMM_LEN];
	struct lw_iter iter;
};

struct lw_block_event {
	__u32 type;
	__u32 pid;
	__u32 tid;
	__s32 nr;
	__u64 start_ns;		/* CLOCK_MONOTONIC */
	__u64 duration_ns;
	__u64 arg0;
	__u32 sleeps;
	__u32 pad;
	struct lw_capture cap;
	struct lw_wait_fds wait;	/* nfds 0: not a nested wait call */
	struct lw_fd_info fd;		/* wait.fds[0], or arg0 as an fd */
	char comm[LW_COMM_LEN];
};

/* self counters, a per-CPU array indexed by these */
enum lw_counter {
	LW_CTR_EVENTS_DROPPED,
	LW_CTR_LOOPS_FULL,	/* LW_MAX_LOOPS records alive: a new loop thread not tracked */
	LW_CTR_SWITCH_INS_MISSED,	/* a loop thread ran with its off_ns still set */
	LW_CTR_LOOPS_REFUSED,	/* the kernel refused to create a loop record */
	LW_CTR_PREEMPTIONS,	/* loop threads preempted inside a busy period */
	LW_CTR_STACK_WALKS,	/* user stacks walked: samples, sleeps, probed calls */
	LW_CTR_MAX,
};

enum lw_thread_flags {
	LW_THREAD_EXITED = 1,
	LW_THREAD_RESTARTING = 2,	/* its wait call resumes through restart_syscall */
	LW_THREAD_INTERRUPTED = 4,	/* its home wait returned -EINTR: a stop may follow */
	LW_THREAD_STOPPED = 8,		/* stopped or ptrace-stopped after that: still waiting */
};

/* The kinds of wait call, and the other syscalls timed entry to exit. */
enum lw_call_kind {
	LW_CALL_EPOLL = 1,	/* epoll_wait, epoll_pwait, epoll_pwait2 */
	LW_CALL_POLL = 2,	/* poll, ppoll */
	LW_CALL_SELECT = 3,	/* select, pselect6 */
	LW_CALL_FLUSH = 4,	/* fsync, fdatasync, sync_file_range, syncfs */
};

/* syscall numbers below this are looked up in the wait programs' table (bpf/loop.bpf.c) */
#define LW_WAIT_NRS 512

/*
 * One loop thread, in the "loops" task storage of its task (up to
 * LW_LOOP_LIVE_SIZE: the histogram's tail lives apart, below); userspace
 * reads the live ones through the "dump_loops" task iterator and the exited
 * ones from "loops_final" and "loop_hists" (deleting them once read), whole
 * each time. The BPF side owns every field; userspace only reads and diffs
 * successive snapshots.
 *
 * Laid out by temperature, for the fewest cache lines a short iteration
 * touches: what every wait call's entry and exit touch comes first (the state,
 * the home wait, a nested call's start), then the totals an iteration's end
 * adds to, then the iteration's counters at the head of struct lw_iter: 216
 * bytes, four or five lines (the record starts part way into a line, after
 * the task storage's element header, whose size differs between kernels).
 * What only context switches touch comes after struct lw_iter, then what is
 * touched only when there is evidence to keep. The histogram takes one more
 * line per iteration; it is last: its buckets past the task storage's limit
 * are the tail. (With the switch fields before the home wait's, and the open
 * blocking call's start read after the evidence, an iteration touched eight.)
 */
struct lw_loop {
	__u32 flags;
	__u32 in_wait;		/* inside a wait call right now */
	__u64 wait_enter_ns;
	__u64 busy_start_ns;	/* return of the last wait call; 0 before the first */
	__u64 off_ns;		/* switched out during a busy period; 0 when on CPU */
	__u8 off_blocked;	/* 1: went to sleep, 0: preempted */
	/*
	 * The iteration's longest wait for a CPU so far has no stack yet: the
	 * next CPU sample's walk is its (bpf/sample.bpf.c). A preemption takes
	 * one only in an iteration half way to a stall: under contention nearly
	 * every iteration is preempted.
	 */
	__u8 runq_walk_owed;
	__u8 preempt_walked;	/* preempt_cap is this off period's */
	__u8 block_open;	/* block holds a call: its start, far below, is read */
	/*
	 * The home wait: the loop's own wait call, at the outermost steady stack
	 * depth. Every other wait call made in a busy period is nested (a handler
	 * waiting) and part of the iteration (bpf/loop.bpf.c says how they are
	 * told apart).
	 */
	__u32 home_kind;	/* enum lw_call_kind */
	__u64 run_delay_start;	/* the task's sched_info.run_delay as the busy period began */
	__u64 home_set;		/* the epoll fd; a poll's array, a select's first set */
	__u64 home_sp;		/* user stack pointer at the latest home wait */
	__u32 nested_run;	/* nested waits since the last home wait */
	/* inside a syscall timed entry to exit (a flush, a nested wait) since call_ns */
	__s32 call_nr;
	__u64 call_ns;

	/* totals since the thread was first seen, all monotonic */
	__u64 iterations;
	__u64 busy_ns;
	__u64 idle_ns;
	__u64 max_busy_ns;
	__u64 blocked_ns;
	__u64 runq_ns;
	__u64 throttled_ns;	/* of runq_ns: throttled by its cgroup's CPU quota */
	__u64 gil_ns;		/* asleep waiting for the GIL, inside iterations */

	/* its counters first: an iteration's end and a switch touch those */
	struct lw_iter iter;

	/* context switches only */
	__u64 wake_ns;		/* woken up after off_ns; 0 if not yet */
	__u64 off_pcount;	/* its sched_info.pcount at off_ns: a switch-in is the next */
	__u64 off_run_delay;	/* and its sched_info.run_delay, at a preemption */
	/*
	 * A preemption inside a busy period: the thread's group run queue on
	 * the CPU it left (struct cfs_rq *, 0: none read) and that run queue's
	 * throttled clock then; the switch-in on the same run queue books the
	 * difference as iter.throttled_ns.
	 */
	__u64 off_cfs_rq;
	__u64 off_throttled_clock;
	/* that preemption's CPU, and whether its wait table there is this thread's */
	__u32 off_cpu;
	__u32 off_watching;
	__u32 off_gil;		/* this off period is a sleep on the GIL */
	__u32 pad_gil;

	/* when there is evidence, or a wait call that is not the home's */
	__u64 home_file;	/* the epoll fd's struct file: gone when the loop closed it */
	__u32 call_kind;	/* enum lw_call_kind */
	struct lw_wait_fds call_wait;	/* a nested wait's fds, read at its entry */
	__u32 pid;
	__u32 tid;
	__u64 stalls;
	__u64 stall_busy_ns;	/* of them: the time, exact (the histogram's is by bucket) */
	struct lw_block block;
	struct lw_capture preempt_cap;	/* where it was last preempted, if walked */
	/* the latest CPU sample's stack, and the busy period it was taken in */
	struct lw_stack_ref last_walk;
	__u64 last_walk_busy_ns;
	__u64 start_ns;		/* task start time */
	char comm[LW_COMM_LEN];	/* process (group leader) name */
	char thread[LW_COMM_LEN];
	struct lw_hist busy_hist;	/* last: split at LW_LOOP_LIVE_BUCKETS */
	/*
	 * Of busy_hist's buckets, the sum of their durations (arrival-weighted
	 * lag), in the tail only: the first LW_LOOP_LIVE_BUCKETS are never summed
	 * (userspace takes their values at the buckets' middles, within 1.6 %),
	 * so that a short iteration, the hot path, touches task storage alone.
	 */
	struct lw_hist_sums busy_sums;
};

/*
 * The largest task storage value the record may use. Since Linux 6.19
 * (f484f4a3e058, "bpf: Replace bpf memory allocator with kmalloc_nolock() in
 * local storage") a task storage element comes from kmalloc_nolock(), which
 * refuses anything over KMALLOC_MAX_CACHE_SIZE (8 KiB on x86-64 and arm64
 * with 4 KiB pages): with the kernel's 72-byte element header, values of up
 * to 8120 bytes are created (tests/kernels/storage_limit.c measures it) and
 * a larger one never is, though the map loads. 256 bytes are left for the
 * header to grow.
 */
#define LW_TASK_STORAGE_MAX (8192 - 256)
/*
 * The record in task storage: everything before the histogram and its first
 * buckets, those of the short iterations (under ~205 us today: the hot path
 * needs no lookup). The rest of the histogram, its tail, is the thread's
 * entry in "loop_hists".
 */
#define LW_LOOP_HIST_AT __builtin_offsetof(struct lw_loop, busy_hist)
#define LW_LOOP_LIVE_BUCKETS ((LW_TASK_STORAGE_MAX - LW_LOOP_HIST_AT) / sizeof(__u64))
#define LW_LOOP_LIVE_SIZE (LW_LOOP_HIST_AT + LW_LOOP_LIVE_BUCKETS * sizeof(__u64))
#define LW_LOOP_TAIL_BUCKETS (LW_HIST_BUCKETS - LW_LOOP_LIVE_BUCKETS)

struct lw_hist_tail {
	__u64 counts[LW_LOOP_TAIL_BUCKETS];
	struct lw_hist_sums sums;	/* those of the live buckets stay 0 */
};

/* the two parts laid end to end are the record userspace reads */
_Static_assert(LW_LOOP_LIVE_SIZE + sizeof(struct lw_hist_tail) == sizeof(struct lw_loop),
	       "struct lw_loop must end with its histogram and its sums");
_Static_assert(LW_LOOP_LIVE_BUCKETS >= 64 && LW_LOOP_LIVE_BUCKETS < LW_HIST_BUCKETS,
	       "struct lw_loop outgrew the task storage limit: move evidence out");

#endif /* LW_ABI_H */
