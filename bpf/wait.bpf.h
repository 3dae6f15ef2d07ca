/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Loop iterations from the wait calls alone: the bodies of the wait hooks,
 * shared by the syscall tracepoint programs (loop.bpf.c) and the fentry/fexit
 * ones (hooks_fentry.bpf.c); userspace/kernel/features.c chooses which set
 * is loaded. busy = return of the home wait -> its next entry; idle = inside
 * it.
 *
 * The home wait is the loop's own: the first wait call a thread makes
 * that is not call-style (below), then every wait on the same set (the
 * same epoll fd; the same poll array or select set). Any other wait call
 * made while the loop is busy is nested -- a handler waiting: a socket with
 * a timeout, a DNS lookup, subprocess.communicate, a second selector or
 * loop -- and is part of the iteration, timed entry to exit like a
 * blocking syscall, unless it shows the loop has moved: it is not deeper
 * in the stack than the home wait (a new loop there), the home's epoll fd
 * is closed, or LW_NESTED_MAX nested waits came in a row.
 *
 * Call-style waits never make a thread a loop thread nor end an iteration:
 * a poll/select on no fd (a sleep) or on one connected socket (a socket
 * timeout, a DNS query, a database driver): a blocking call in disguise.
 */

#ifndef LOOPWATCH_WAIT_BPF_H
#define LOOPWATCH_WAIT_BPF_H

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "iteration.bpf.h"
#include "fd.bpf.h"

/* off: every wait call ends an iteration (--no-nested-waits) */
extern const volatile bool nested_waits;

/* nested waits in a row (not call-style) after which their set is the home */
#define LW_NESTED_MAX 64
/* a select's sets are read up to fd 1023 (FD_SETSIZE) */
#define LW_SELECT_WORDS 16

#include "filter.bpf.h"

/*
 * Once per new loop thread: userspace reads the process's mappings while it
 * surely lives, so a stall just before exit can still be symbolized.
 */
static __always_inline void loop__announce(__u32 pid, __u32 tid)
{
	struct lw_new_loop_event *e = events__reserve(sizeof(*e), LW_EV_NEW_LOOP);

	if (!e)
		return;
	e->pid = pid;
	e->tid = tid;
	e->pad = 0;
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
}

/* a full hash map's update */
#define E2BIG 7

/* Loop records alive: at most LW_MAX_LOOPS are created. */
__u32 nloops __weak = 0;

static __always_inline struct lw_loop *loop__create(struct task_struct *task, __u32 pid,
						   __u32 tid)
{
	struct lw_hist_tail *zero;
	struct lw_loop *l;
	__u32 key = 0;
	long err;

	/*
	 * Past the cap a new loop thread is not tracked (and counted): nothing
	 * is evicted, so the threads already tracked keep their history. (Two
	 * CPUs creating at once may pass it by one each.)
	 */
	if (nloops >= LW_MAX_LOOPS) {
		counter__inc(LW_CTR_LOOPS_FULL);
		return NULL;
	}
	/*
	 * A kernel that cannot allocate the record is counted apart from the
	 * cap: userspace says it loudly (a tracer blind to every loop is the
	 * worst it can be).
	 */
	zero = bpf_map_lookup_elem(&hist_zero, &key);
	if (!zero)
		return NULL;
	err = bpf_map_update_elem(&loop_hists, &tid, zero, BPF_ANY);
	if (err) {
		counter__inc(err == -E2BIG ? LW_CTR_LOOPS_FULL : LW_CTR_LOOPS_REFUSED);
		return NULL;
	}
	/* zeroed by the kernel: only the identity is filled in */
	l = bpf_task_storage_get(&loops, task, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!l) {
		bpf_map_delete_elem(&loop_hists, &tid);
		counter__inc(LW_CTR_LOOPS_REFUSED);
		return NULL;
	}
	__sync_fetch_and_add(&nloops, 1);
	loop_tid__set(tid, LOOP_TID_RECORD);
	l->pid = pid;
	l->tid = tid;
	l->start_ns = BPF_CORE_READ(task, start_time);
	BPF_CORE_READ_STR_INTO(&l->comm, task, group_leader, comm);
	bpf_get_current_comm(&l->thread, sizeof(l->thread));
	loop__announce(pid, tid);
	return l;
}

/*
 * An iteration's parts fit in it: the wait for a CPU first, then the sleeps
 * on the GIL and the other sleeps in what is left; the quota's part is of
 * the wait for a CPU.
 */
static __always_inline void iter__bound(struct lw_iter *it, __u64 busy_ns)
{
	if (it->runq_ns > busy_ns)
		it->runq_ns = busy_ns;
	if (it->gil_ns > busy_ns - it->runq_ns)
		it->gil_ns = busy_ns - it->runq_ns;
	if (it->blocked_ns > busy_ns - it->runq_ns - it->gil_ns)
		it->blocked_ns = busy_ns - it->runq_ns - it->gil_ns;
	if (it->throttled_ns > it->runq_ns)
		it->throttled_ns = it->runq_ns;
}

static __noinline void stall__emit(struct lw_loop *l, __u64 now, __u64 busy_ns)
{
	struct lw_stall_event *e;

	if (busy_ns >= stall_threshold_ns) {
		l->stalls++;
		l->stall_busy_ns += busy_ns;
	}
	e = events__reserve(sizeof(*e), LW_EV_STALL);
	if (!e)
		return;
	e->pid = l->pid;
	e->tid = l->tid;
	e->pad = 0;
	e->start_ns = now - busy_ns;
	e->duration_ns = busy_ns;
	__builtin_memcpy(e->comm, l->comm, LW_COMM_LEN);
	bpf_get_current_comm(e->thread, sizeof(e->thread));
	bpf_probe_read_kernel(&e->iter, sizeof(e->iter), &l->iter);
	/*
	 * Bounded again as the iteration was: fentry programs (and, since the
	 * syscall tracepoints may fault, theirs too) run preemptible, and a
	 * switch of this very thread in the middle of this hook adds to the
	 * iteration's run-queue time after it was bounded (seen under TCG).
	 */
	iter__bound(&e->iter, busy_ns);
	bpf_ringbuf_submit(e, LW_RB_LAZY);
}

/*
 * An iteration too long for the buckets in task storage: its thread's tail,
 * with the exact sum of the bucket's durations (arrival-weighted lag: the
 * short buckets' are taken at their middles, lib/arrival.h).
 */
static __noinline void hist__add_tail(__u32 tid, unsigned int idx, __u64 ns)
{
	struct lw_hist_tail *t = bpf_map_lookup_elem(&loop_hists, &tid);
	unsigned int i = idx - LW_LOOP_LIVE_BUCKETS;

	/* checked as the index it is, not folded into the address */
	barrier_var(i);
	if (!t || i >= LW_LOOP_TAIL_BUCKETS)
		return;
	t->counts[i]++;
	barrier_var(idx);
	if (idx < LW_HIST_BUCKETS)
		t->sums.ns[idx] += ns;
}

/* An iteration of busy_ns into its thread's totals and histogram. */
static __always_inline void loop__count_iteration(struct lw_loop *l, __u64 busy_ns)
{
	unsigned int idx = lw_hist_bucket(busy_ns);

	l->blocked_ns += l->iter.blocked_ns;
	l->runq_ns += l->iter.runq_ns;
	l->throttled_ns += l->iter.throttled_ns;
	l->gil_ns += l->iter.gil_ns;
	__builtin_memset(&l->iter, 0, LW_ITER_COUNTERS_SIZE);
	l->runq_walk_owed = 0;

	l->iterations++;
	l->busy_ns += busy_ns;
	if (busy_ns > l->max_busy_ns)
		l->max_busy_ns = busy_ns;
	if (idx < LW_LOOP_LIVE_BUCKETS)
		l->busy_hist.counts[idx]++;
	else
		hist__add_tail(l->tid, idx, busy_ns);
}

/* The iteration ended at now: account it, report it if it stalled, start afresh. */
static __always_inline void loop__end_iteration(struct lw_loop *l, struct task_struct *task,
						 __u64 now)
{
	__u64 busy_ns = now - l->busy_start_ns, runq;

	/*
	 * Its wait for a CPU is the scheduler's own count, which needs no switch
	 * to be seen, or what the switches seen add up to where that is more:
	 * run_delay misses the wait after some wake-ups on a loaded host (a
	 * nested poll's 1.5 ms, by the workload's own schedstat too). The sleeps
	 * fit in what is left.
	 */
	runq = task->sched_info.run_delay - l->run_delay_start;
	if (runq > l->iter.runq_ns)
		l->iter.runq_ns = runq;
	iter__bound(&l->iter, busy_ns);
	block__close(l);
	if (busy_ns >= slow_threshold_ns)
		stall__emit(l, now, busy_ns);
	loop__count_iteration(l, busy_ns);
}


/* A wait call as its entry shows it. */
struct wait_call {
	__u32 kind;		/* enum lw_call_kind */
	__u64 set;		/* what the home wait is known by (struct lw_loop) */
	__u64 sp;
};

enum wait_role {
	WAIT_HOME,		/* the loop's own: ends the iteration */
	WAIT_NEW_HOME,		/* the loop moved here: ends the iteration, and is the home */
	WAIT_NESTED,		/* inside a handler: part of the iteration */
};

static __always_inline __u32 bits__count(__u64 x)
{
	x = x - ((x >> 1) & 0x5555555555555555ULL);
	x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
	x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
	return (__u32)((x * 0x0101010101010101ULL) >> 56);
}

static __always_inline void poll__fds(const __u64 *args, struct lw_wait_fds *w)
{
	struct pollfd pfds[LW_WAIT_FDS];
	__u64 n = args[1];
	__u32 k = n < LW_WAIT_FDS ? (__u32)n : LW_WAIT_FDS;

	w->nfds = n > 0xffffffffULL ? 0xffffffffU : (__u32)n;
	if (!k || k > LW_WAIT_FDS ||
	    bpf_probe_read_user(pfds, k * sizeof(pfds[0]), (void *)args[0]))
		return;
	for (__u32 i = 0; i < LW_WAIT_FDS; i++)
		if (i < k)
			w->fds[i] = pfds[i].fd;
}

/* A select's three sets, scanned a word (64 fds) at a time by bpf_loop. */
struct select_scan {
	__u64 sets[3];		/* user pointers to the read, write and except sets */
	__u64 n;		/* fds below n */
	__u64 first_bits;	/* the first word with any fd set, and which word */
	__u64 first_word;
	__u32 nfds;
};

/* bpf_loop's callback: its body is verified once, not once per word */
static long select__word(__u64 i, void *arg)
{
	struct select_scan *scan = arg;
	__u64 bits = 0, word, left;

	if (i * 64 >= scan->n)
		return 1;
	for (int set = 0; set < 3; set++) {
		if (scan->sets[set] && !bpf_probe_read_user(&word, sizeof(word),
				(void *)(scan->sets[set] + i * sizeof(word))))
			bits |= word;
	}
	left = scan->n - i * 64;
	if (left < 64)
		bits &= (1ULL << left) - 1;
	scan->nfds += bits__count(bits);
	if (bits && !scan->first_bits) {
		scan->first_bits = bits;
		scan->first_word = i;
	}
	return 0;
}

/* select__word without bpf_loop() (bpf/features.bpf.h) */
__weak __noinline int select__word_alone(__u32 i, struct select_scan *scan)
{
	return scan ? (int)select__word(i, scan) : 1;
}

/* How many fds the sets hold, and the lowest (those of the first 64 that has any). */
static __always_inline void select__fds(const __u64 *args, struct lw_wait_fds *w)
{
	struct select_scan scan = {
		.sets = { args[1], args[2], args[3] },
		.n = args[0] & 0xffffffffULL,
	};
	__u64 bits;

	if (scan.n > LW_SELECT_WORDS * 64)
		scan.n = LW_SELECT_WORDS * 64;
	lw_loop(LW_SELECT_WORDS, select__word, select__word_alone, &scan);
	w->nfds = scan.nfds;
	bits = scan.first_bits;
	for (int i = 0; i < LW_WAIT_FDS && bits; i++) {
		w->fds[i] = (__s32)((scan.first_word & (LW_SELECT_WORDS - 1)) * 64 +
				    lw_log2(bits & -bits));
		bits &= bits - 1;
	}
}

static __always_inline void wait__fds(const __u64 *args, __u32 kind,
				      struct lw_wait_fds *w)
{
	w->nfds = 0;
	for (int i = 0; i < LW_WAIT_FDS; i++)
		w->fds[i] = -1;
	if (kind == LW_CALL_EPOLL) {
		w->nfds = 1;
		w->fds[0] = (__s32)args[0];
	} else if (kind == LW_CALL_POLL) {
		poll__fds(args, w);
	} else {
		select__fds(args, w);
	}
}

/* A poll or select on no fd (a sleep) or on one connected socket only. */
static __always_inline bool wait__call_style(struct task_struct *task, __u32 kind,
					     const struct lw_wait_fds *w)
{
	struct file *file;
	struct sock *sk;

	if (kind == LW_CALL_EPOLL || w->nfds > 1)
		return false;
	/* a poll entry with a negative fd is skipped: nothing to wait for */
	if (!w->nfds || w->fds[0] < 0)
		return true;
	file = fd__file(task, w->fds[0]);
	sk = file ? file__inet_or_unix_sock(file) : NULL;
	return sk && sock__has_peer(sk);
}

static __always_inline void home__set(struct lw_loop *l, struct task_struct *task,
				      const struct wait_call *w)
{
	l->home_kind = w->kind;
	l->home_set = w->set;
	l->home_sp = w->sp;
	l->home_file = w->kind == LW_CALL_EPOLL ? (__u64)fd__file(task, (__s64)w->set) : 0;
}

/*
 * Not the home wait's own set: is it a handler's wait, or has the loop
 * moved? The stack says: a handler runs below the loop's wait call, so its
 * wait is deeper. A new loop run deeper while the old one is still open is
 * taken for nested until LW_NESTED_MAX waits in a row (--no-nested-waits).
 */
static __always_inline enum wait_role wait__role(struct lw_loop *l, struct task_struct *task,
						 const struct wait_call *w,
						 const struct lw_wait_fds *fds)
{
	if (wait__call_style(task, w->kind, fds))
		return WAIT_NESTED;
	if (w->sp >= l->home_sp)
		return WAIT_NEW_HOME;
	if (l->home_kind == LW_CALL_EPOLL &&
	    (__u64)fd__file(task, (__s64)l->home_set) != l->home_file)
		return WAIT_NEW_HOME;
	if (++l->nested_run >= LW_NESTED_MAX)
		return WAIT_NEW_HOME;
	return WAIT_NESTED;
}

/*
 * A thread that is no loop and waits call-style again and again (a client
 * library polling its one connected socket for every request): the last
 * such wait, so that the same wait from the same place is not classified
 * again -- reading the poll array, the fd table and the socket took ~0.6 us
 * a call on a contended host. Classified afresh every LW_CALLER_RECHECK
 * calls, in case the fd behind the same array became a loop's. (Not the
 * threads of processes left out: task storage on them would cost each of
 * their context switches a lookup, bpf/maps.bpf.h.)
 */
#define LW_CALLER_RECHECK 64

struct caller {
	__u64 arg0;
	__u64 arg1;
	__u64 sp;
	__u32 kind;
	__u32 hits;
};

/* With the task, like the loop records: no thread churn can fill it. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct caller);
} callers SEC(".maps") __weak;

static __always_inline bool caller__same(struct caller *c, const struct wait_call *w,
					 const __u64 *args)
{
	return c->kind == w->kind && c->sp == w->sp && c->arg0 == args[0] &&
	       c->arg1 == args[1] && ++c->hits % LW_CALLER_RECHECK;
}

static __always_inline void caller__remember(struct task_struct *task, const struct wait_call *w,
					     const __u64 *args)
{
	struct caller *c = bpf_task_storage_get(&callers, task, NULL,
						BPF_LOCAL_STORAGE_GET_F_CREATE);

	if (!c)
		return;
	c->kind = w->kind;
	c->sp = w->sp;
	c->arg0 = args[0];
	c->arg1 = args[1];
	c->hits = 0;
}

/*
 * A thread with no loop record makes a wait call: a new loop thread, a
 * call-style wait (remembered, so that the same one is not classified
 * again) or a process left out. Out of line: it keeps the loop threads'
 * path below short, the one every iteration takes.
 */
static __noinline int wait__enter_untracked(struct task_struct *task, struct wait_call *w,
					    const __u64 *args)
{
	struct caller *c = task->bpf_storage ? bpf_task_storage_get(&callers, task, NULL, 0) : NULL;
	__u64 id = bpf_get_current_pid_tgid();
	struct lw_wait_fds fds;
	__u32 pid = id >> 32;
	struct lw_loop *l;

	/* only a watched process's waits are remembered: its own again is not told apart */
	if (c && caller__same(c, w, args))
		return 0;
	if (!process__wanted(task, pid))
		return 0;
	if (nested_waits) {
		wait__fds(args, w->kind, &fds);
		if (wait__call_style(task, w->kind, &fds)) {
			caller__remember(task, w, args);
			return 0;
		}
	}
	l = loop__create(task, pid, (__u32)id);
	if (!l)
		return 0;
	home__set(l, task, w);
	l->in_wait = 1;
	l->wait_enter_ns = bpf_ktime_get_ns();
	return 0;
}

/*
 * A loop thread busy in an iteration waits on another set than its home's:
 * a handler's nested wait (timed as a call: true), or the loop moved there
 * (false: the home wait's path follows). Out of line, as above.
 */
static __noinline bool wait__enter_nested(struct lw_loop *l, struct task_struct *task,
					  struct wait_call *w, const __u64 *args, __s32 nr)
{
	struct lw_wait_fds fds;
	enum wait_role role;
	__u64 now;

	wait__fds(args, w->kind, &fds);
	role = wait__role(l, task, w, &fds);
	if (role == WAIT_NEW_HOME) {
		home__set(l, task, w);
		return false;
	}
	now = bpf_ktime_get_ns();
	call__enter(l, nr, w->kind, now);
	l->call_wait = fds;
	return true;
}

/*
 * A wait call enters (kind: enum lw_call_kind; nr: its syscall number; the
 * call's first four arguments and the user stack pointer), whichever hook saw
 * it. A thread that is no loop pays a task-storage miss (two pointer loads)
 * before anything else.
 */
static __always_inline int wait__enter(struct task_struct *task, __u32 kind, __s32 nr,
				       const __u64 *args, __u64 sp)
{
	struct lw_loop *l = loop__of(task);
	struct wait_call w = { .kind = kind, .set = args[0], .sp = sp };
	__u64 now;

	/* what the home wait is known by: the epoll fd, a poll's array, a select's set */
	if (kind == LW_CALL_SELECT)
		w.set = args[1] ? args[1] : args[2] ? args[2] : args[3];
	if (!l)
		return wait__enter_untracked(task, &w, args);
#if LW_TIMING_ONLY
	now = bpf_ktime_get_ns();
	if (l->busy_start_ns && !l->in_wait)
		loop__count_iteration(l, now - l->busy_start_ns);
	l->in_wait = 1;
	l->wait_enter_ns = now;
	return 0;
#endif
	if (nested_waits && !l->in_wait && (kind != l->home_kind || w.set != l->home_set) &&
	    wait__enter_nested(l, task, &w, args, nr))
		return 0;
	now = bpf_ktime_get_ns();
	l->home_sp = w.sp;
	l->nested_run = 0;
	l->flags &= ~LW_THREAD_INTERRUPTED;
	loop__close_missed(l, now);
	if (l->busy_start_ns && !l->in_wait)
		loop__end_iteration(l, task, now);
	l->in_wait = 1;
	l->wait_enter_ns = now;
	return 0;
}

/* the kernel's "restart the call" codes (include/linux/errno.h) */
#define ERESTARTSYS 512
#define ERESTARTNOINTR 513
#define ERESTARTNOHAND 514
#define ERESTART_RESTARTBLOCK 516
#define EINTR 4

/*
 * A wait call of task's returns (nr: its syscall number; ret: what it
 * returns), whichever hook saw it; on the restart hook (restart_syscall's exit) only
 * a poll/select resumed after a stop ends.
 */
static __always_inline int wait__exit(struct task_struct *task, bool restart_hook, __s32 nr,
				      long ret)
{
	struct lw_loop *l = loop__of(task);
	__u64 now;

	if (!l)
		return 0;
	if (restart_hook && !(l->flags & LW_THREAD_RESTARTING))
		return 0;
	now = bpf_ktime_get_ns();
#if LW_TIMING_ONLY
	if (!l->in_wait)
		return 0;
	l->idle_ns += now - l->wait_enter_ns;
	l->in_wait = 0;
	l->busy_start_ns = now;
	return 0;
#endif
	/* a nested wait returns: the iteration goes on */
	if (l->call_ns && l->call_nr == nr) {
		call__exit(l, now);
		return 0;
	}
	if (!l->in_wait)
		return 0;
	l->idle_ns += now - l->wait_enter_ns;
	/*
	 * A stop/continue, a ptrace attach or a signal with SA_RESTART: the
	 * kernel resumes the very same wait (restart_syscall, or re-executing
	 * it). Still waiting: no busy period starts here.
	 */
	if (ret == -ERESTARTSYS || ret == -ERESTARTNOINTR || ret == -ERESTARTNOHAND ||
	    ret == -ERESTART_RESTARTBLOCK) {
		l->wait_enter_ns = now;
		if (ret == -ERESTART_RESTARTBLOCK)
			l->flags |= LW_THREAD_RESTARTING;
		return 0;
	}
	l->flags &= ~LW_THREAD_RESTARTING;
	if (ret == -EINTR)
		l->flags |= LW_THREAD_INTERRUPTED;
	loop__close_missed(l, now);
	l->in_wait = 0;
	l->busy_start_ns = now;
	l->run_delay_start = task->sched_info.run_delay;
	return 0;
}

#endif
