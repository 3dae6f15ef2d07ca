/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The life of one iteration's evidence, shared by the wait-call programs
 * (which end iterations) and the scheduler programs (which see blocking).
 */
#ifndef LOOPWATCH_ITERATION_BPF_H
#define LOOPWATCH_ITERATION_BPF_H

#include "maps.bpf.h"
#include "runtimes/runtimes.bpf.h"
#include "unwind.bpf.h"

/*
 * Events are submitted without waking the collector: a wakeup is irq work
 * and a scheduler wakeup charged to the traced thread, and the collector
 * polls the ring buffer on a short timer anyway (main.c). Only a new loop,
 * which the tracker must set up before its first stall, wakes it.
 */
#define LW_RB_LAZY BPF_RB_NO_WAKEUP

static __always_inline void counter__inc(enum lw_counter which)
{
	__u32 key = which;
	__u64 *v = bpf_map_lookup_elem(&counters, &key);

	if (v)
		(*v)++;
}

/*
 * A ring buffer slot of size bytes for an event (struct lw_*_event: its type
 * word first), the type set; NULL, with the drop counted, when it is full.
 */
static __always_inline void *events__reserve(__u64 size, __u32 type)
{
	__u32 *e = bpf_ringbuf_reserve(&events, size, 0);

	if (!e) {
		counter__inc(LW_CTR_EVENTS_DROPPED);
		return NULL;
	}
	*e = type;
	return e;
}

/*
 * The sleep in an off-CPU period that ends at now, within the busy period:
 * up to its wakeup if that was seen, else up to now. Returns where the sleep
 * ended: from there to now the thread waited for a CPU.
 */
static __always_inline __u64 loop__book_sleep(struct lw_loop *l, __u64 now)
{
	__u64 from = l->off_ns > l->busy_start_ns ? l->off_ns : l->busy_start_ns;
	__u64 to = now;

	if (l->wake_ns >= from && l->wake_ns <= now)
		to = l->wake_ns;
	/* a sleep on the GIL is its own part: the holder, not a call, kept it */
	if (l->off_gil)
		gil__book_live((struct lw_loop_live *)l, to > from ? to - from : 0);
	else if (to > from)
		l->iter.blocked_ns += to - from;
	return to;
}

/*
 * How long the task's group run queue on this CPU has been throttled by its
 * cgroup's CPU quota, by the kernel's own clock (Linux 6.7+: the finished
 * throttles' sum and the one under way; a parent's throttle counts, the
 * kernel throttles every run queue below it). The run queue's clock is fresh:
 * the scheduler updated it before this switch. 0 where the kernel keeps no
 * such clock or the task has no group (the root's never throttles).
 */
static __always_inline __u64 cfs__throttled_clock(struct task_struct *task, __u64 *cfs_rq)
{
	struct cfs_rq *cfs;
	__u64 total, since;

	*cfs_rq = 0;
	if (!bpf_core_field_exists(struct cfs_rq, throttled_clock_self) ||
	    !bpf_core_field_exists(struct sched_entity, cfs_rq))
		return 0;
	/*
	 * Plain loads through the task's BTF pointer, not BPF_CORE_READ's
	 * probe reads: four of those cost ~0.1 us, twice per preemption.
	 */
	cfs = task->se.cfs_rq;
	if (!cfs)
		return 0;
	*cfs_rq = (__u64)cfs;
	total = cfs->throttled_clock_self_time;
	since = cfs->throttled_clock_self;
	if (since) {
		__u64 clock = cfs->rq->clock;

		if (clock > since)
			total += clock - since;
	}
	return total;
}

/*
 * Of a wait for a CPU that ends now, the time its group run queue was
 * throttled: a thread its quota ran out under is taken off the CPU and put
 * back when the period refills it. Only on the run queue it left: one on
 * another CPU has a clock of its own.
 */
static __always_inline void runq__book_throttled(struct lw_loop *l, struct task_struct *next,
						 __u64 now)
{
	__u64 cfs_rq, clock, left = l->off_cfs_rq;

	if (!left)
		return;
	/* once per wait: a missed switch-in books it where it is found */
	l->off_cfs_rq = 0;
	clock = cfs__throttled_clock(next, &cfs_rq);
	if (cfs_rq != left || clock <= l->off_throttled_clock)
		return;
	clock -= l->off_throttled_clock;
	l->iter.throttled_ns += clock < now - l->off_ns ? clock : now - l->off_ns;
}

/*
 * The task leaving this CPU ran since the CPU's last switch while a loop
 * thread waited for it: charge it. Every context switch of the machine asks;
 * with no waiter it is a per-CPU lookup and a load.
 */
static __noinline void cpu_wait__charge_now(struct lw_cpu_wait *w, struct task_struct *prev,
					    __u64 now)
{
	__u32 tid, n, i, min = 0;
	__u64 ns;

	if (now - w->start_ns > LW_CPU_WAIT_MAX_NS) {
		w->tid = 0;
		return;
	}
	ns = now - w->last_ns;
	w->last_ns = now;
	tid = prev->pid;
	/* the idle task had it: the waiter was not waiting for this CPU then */
	if (!tid || tid == w->tid)
		return;
	n = w->n;
	for (i = 0; i < LW_CPU_NEIGHBOURS; i++) {
		if (i >= n)
			break;
		if (w->top[i].tid == tid) {
			w->top[i].ns += ns;
			return;
		}
		if (w->top[i].ns < w->top[min].ns)
			min = i;
	}
	/* full: the one that had it least makes room, if this one had it longer */
	if (n < LW_CPU_NEIGHBOURS)
		w->n = n + 1;
	else if (w->top[min].ns < ns)
		n = min;
	else
		return;
	if (n >= LW_CPU_NEIGHBOURS)
		return;
	w->top[n].tid = tid;
	w->top[n].pid = prev->tgid;
	w->top[n].ns = ns;
	w->top[n].stack = (struct lw_stack_ref){ .kernel = -1 };
	bpf_probe_read_kernel(w->top[n].comm, sizeof(w->top[n].comm), prev->comm);
}

/*
 * Out of line past the check every switch of the machine makes (bpf/wait.bpf.h
 * says why). Returns the clock it read, or 0: the switch's program reads it
 * once (a read costs ~45 ns in a VM, as much as the rest of a switch-out).
 */
static __always_inline __u64 cpu_wait__charge(struct task_struct *prev)
{
	struct lw_cpu_wait *w = cpu_wait__here();
	__u64 now;

	if (!w || !w->tid)
		return 0;
	now = bpf_ktime_get_ns();
	cpu_wait__charge_now(w, prev, now);
	return now;
}

/* A loop thread preempted inside an iteration waits for this CPU: watch who gets it. */
static __always_inline void cpu_wait__begin(struct lw_loop *l, __u64 now)
{
	struct lw_cpu_wait *w;

	l->off_watching = 0;
	w = cpu_wait__here();
	/* another loop thread waits here already: the first keeps it */
	if (!w || (w->tid && now - w->start_ns <= LW_CPU_WAIT_MAX_NS))
		return;
	w->tid = l->tid;
	w->n = 0;
	w->start_ns = now;
	w->last_ns = now;
	l->off_cpu = bpf_get_smp_processor_id();
	l->off_watching = 1;
}

/* One more party's time into a list of the longest n (neighbours, wakers). */
static __always_inline void party__add(struct lw_neighbour *v, __u32 *count, __u32 max,
				       const struct lw_neighbour *nb)
{
	__u32 n = *count, min = 0, i;

	for (i = 0; i < LW_ITER_NEIGHBOURS; i++) {
		if (i >= n || i >= max)
			break;
		if (v[i].tid == nb->tid) {
			v[i].ns += nb->ns;
			return;
		}
		if (v[i].ns < v[min].ns)
			min = i;
	}
	if (n < max)
		*count = n + 1;
	else if (v[min].ns < nb->ns)
		n = min;
	else
		return;
	if (n >= max || n >= LW_ITER_NEIGHBOURS)
		return;
	v[n] = *nb;
}

/*
 * It runs again: who had the CPU, into the iteration's evidence, and the
 * CPU's table given back. Only a wait long enough to matter to a stall
 * (an eighth of the slow threshold) is kept: under contention most
 * iterations are preempted briefly. On another CPU than the one it left,
 * the task running there now is not charged its last part. A global
 * function, like block__close_live: its loops are verified once, not in
 * every caller's states.
 */
__weak __noinline int cpu_wait__end_live(struct lw_loop_live *live, __u64 now)
{
	struct lw_loop *l = (struct lw_loop *)live;
	struct lw_cpu_wait *w;

	if (!l || !l->off_watching)
		return 0;
	l->off_watching = 0;
	w = cpu_wait__on(l->off_cpu);
	if (!w || w->tid != l->tid)
		return 0;
	if (now - l->off_ns >= slow_threshold_ns / 8) {
		for (__u32 i = 0; i < LW_CPU_NEIGHBOURS; i++) {
			if (i >= w->n)
				break;
			party__add(l->iter.neighbours, &l->iter.nneighbours, LW_ITER_NEIGHBOURS,
				   &w->top[i]);
		}
	}
	w->tid = 0;
	return 0;
}

static __always_inline void cpu_wait__end(struct lw_loop *l, __u64 now)
{
	if (l->off_watching)
		cpu_wait__end_live((struct lw_loop_live *)l, now);
}

/*
 * A capture whose stack was taken elsewhere (a CPU sample's), or none: no
 * stack words of its own, so no earlier capture's words repair its leaf.
 */
static __always_inline void capture__set(struct lw_capture *cap, const struct lw_stack_ref *st)
{
	cap->stack = *st;
	cap->words[0] = LW_WORDS_NONE;
}

/*
 * A wait for a CPU of wait_ns after a preemption ended. The longest names what
 * the CPU was waited for in: its own stack if the iteration was half way to a
 * stall when it began; else the thread resumes where it stopped, and the next
 * CPU sample's stack is taken there, within a tick of CPU time
 * (bpf/sample.bpf.c); until then, and if the iteration ends first, the latest
 * sample's before it. Walking at every preemption cost 8.5 us a switch on a
 * saturated host.
 */
static __always_inline void runq__wait_ended(struct lw_loop *l, __u64 wait_ns)
{
	struct lw_stack_ref none = { .kernel = -1 };

	l->iter.runq_ns += wait_ns;
	if (wait_ns <= l->iter.runq_max_ns)
		return;
	l->iter.runq_max_ns = wait_ns;
	l->runq_walk_owed = !l->preempt_walked;
	if (l->preempt_walked)
		bpf_probe_read_kernel(&l->iter.runq_cap, sizeof(l->iter.runq_cap), &l->preempt_cap);
	else
		capture__set(&l->iter.runq_cap,
			     l->last_walk_busy_ns == l->busy_start_ns ? &l->last_walk : &none);
}

/*
 * The thread is running, so it is not off CPU: an off_ns still set is from a
 * switch-out whose switch-in the sched_switch tracepoint never delivered (the
 * kernel's own sched_switch trace event misses the same switch). Inside the
 * busy period its sleep is booked; before it (a stale period) nothing is.
 */
static __noinline void loop__close_missed_now(struct lw_loop *l, __u64 now)
{
	struct task_struct *task = bpf_get_current_task_btf();
	bool busy = l->busy_start_ns && !l->in_wait;
	__u64 to;

	/* the current task: the scheduler's tracepoint books a switch-in's own before */
	if (busy)
		runq__book_throttled(l, task, now);
	cpu_wait__end(l, now);
	/*
	 * A preemption's wait, by the scheduler's own count, where the thread
	 * itself runs this: it is a wait like any other, and may be the longest
	 * (a SCHED_FIFO task's 8 ms on the CPU, missed so, went without a stack).
	 */
	if (busy && !l->off_blocked && task->pid == l->tid)
		runq__wait_ended(l, task->sched_info.run_delay - l->off_run_delay);
	if (busy && l->off_blocked) {
		to = loop__book_sleep(l, now);
		if (l->block_open)
			l->block.last_in_ns = to;
	}
	l->off_ns = 0;
	loop_tid__clear(l->tid, LOOP_TID_ASLEEP);
	counter__inc(LW_CTR_SWITCH_INS_MISSED);
}

/* rare: out of line, as every cold path of the hooks is (bpf/wait.bpf.h says why) */
static __always_inline void loop__close_missed(struct lw_loop *l, __u64 now)
{
	if (l->off_ns)
		loop__close_missed_now(l, now);
}

/*
 * An iteration's longest wait for a CPU so far is owed a stack: a CPU sample
 * walks for it even under the sampling gate once the iteration is half way to
 * the slow threshold (a younger one's longest wait is short or early, and its
 * own samples name its time). Under contention most iterations are
 * preempted, and a walk costs microseconds.
 */
static __always_inline bool runq__walk_wanted(const struct lw_loop *l, __u64 now)
{
	return now - l->busy_start_ns >= slow_threshold_ns / 2;
}

/* Between a wait call's return and the next wait call. */
static __always_inline bool loop__busy(const struct lw_loop *l)
{
	return !l->in_wait && l->busy_start_ns && !(l->flags & LW_THREAD_EXITED);
}

static __always_inline void iter__add_syscall(struct lw_iter *it, __s32 nr, __u64 ns)
{
	__u32 n = it->nsyscalls;

	for (int i = 0; i < LW_ITER_SYSCALLS; i++) {
		if (i >= n)
			break;
		if (it->syscalls[i].nr == nr) {
			it->syscalls[i].count++;
			it->syscalls[i].ns += ns;
			return;
		}
	}
	if (n >= LW_ITER_SYSCALLS)
		return;
	it->syscalls[n].nr = nr;
	it->syscalls[n].count = 1;
	it->syscalls[n].ns = ns;
	it->nsyscalls = n + 1;
}

static __always_inline void syscall__account(struct lw_loop *l, __s32 nr, __u64 ns)
{
	struct lw_syscall_key key = { .pid = l->pid, .nr = nr };
	struct lw_syscall_stats *st = bpf_map_lookup_elem(&syscall_stats, &key);
	unsigned int idx = lw_hist_bucket(ns);
	__u32 zero = 0;

	if (!st) {
		struct lw_syscall_stats *z = bpf_map_lookup_elem(&syscall_zero, &zero);

		if (!z)
			return;
		bpf_map_update_elem(&syscall_stats, &key, z, BPF_NOEXIST);
		st = bpf_map_lookup_elem(&syscall_stats, &key);
		if (!st)
			return;
		__builtin_memcpy(st->comm, l->comm, LW_COMM_LEN);
	}
	/* threads of one process share the entry from different CPUs */
	__sync_fetch_and_add(&st->count, 1);
	__sync_fetch_and_add(&st->total_ns, ns);
	if (ns > st->max_ns)
		st->max_ns = ns;
	if (idx < LW_HIST_BUCKETS)
		__sync_fetch_and_add(&st->hist.counts[idx], 1);
}

/*
 * The open invocation ended: count it, and report it if it was long.
 * A global function: the verifier checks it once, on its own, instead of
 * inside every caller's states (the wait-call entry program went from 71k
 * to 8.5k instructions processed). __weak: every object includes it. It
 * takes the record as the maps hold it: the verifier wants a global
 * function's argument whole, and task storage holds struct lw_loop only up
 * to LW_LOOP_LIVE_SIZE.
 */
__weak __noinline int block__close_live(struct lw_loop_live *live)
{
	struct lw_loop *l = (struct lw_loop *)live;
	struct lw_block_event *e;
	struct lw_block *b;
	__u32 n;
	__u64 ns;

	if (!l || !l->block.start_ns)
		return 0;
	b = &l->block;
	n = l->iter.nblocks;
	ns = b->last_in_ns > b->start_ns ? b->last_in_ns - b->start_ns : 0;
	b->start_ns = 0;
	l->block_open = 0;
	iter__add_syscall(&l->iter, b->nr, ns);
	syscall__account(l, b->nr, ns);
	if (ns < block_threshold_ns)
		return 0;
	if (n < LW_ITER_BLOCKS) {
		bpf_probe_read_kernel(&l->iter.blocks[n].cap, sizeof(b->cap), &b->cap);
		l->iter.blocks[n].nr = b->nr;
		l->iter.blocks[n].sleeps = b->sleeps;
		l->iter.blocks[n].ns = ns;
		l->iter.nblocks = n + 1;
	}
	e = events__reserve(sizeof(*e), LW_EV_BLOCK);
	if (!e)
		return 0;
	e->pid = l->pid;
	e->tid = l->tid;
	e->nr = b->nr;
	e->start_ns = b->last_in_ns - ns;
	e->duration_ns = ns;
	e->arg0 = b->arg0;
	e->sleeps = b->sleeps;
	e->pad = 0;
	bpf_probe_read_kernel(&e->cap, sizeof(e->cap), &b->cap);
	e->wait = b->wait;
	bpf_probe_read_kernel(&e->fd, sizeof(e->fd), &b->fd);
	__builtin_memcpy(e->comm, l->comm, LW_COMM_LEN);
	bpf_ringbuf_submit(e, LW_RB_LAZY);
	return 0;
}

/* every iteration's end asks: the record's head says, not the block's line */
static __always_inline int block__close(struct lw_loop *l)
{
	return l->block_open ? block__close_live((struct lw_loop_live *)l) : 0;
}

/*
 * A syscall whose entry and exit are traced (a flush, a nested wait call):
 * its invocation is bounded exactly, entry to exit, including the CPU time
 * the scheduler alone cannot tell from the iteration around it.
 */
static __always_inline void call__enter(struct lw_loop *l, __s32 nr, __u32 kind, __u64 now)
{
	loop__close_missed(l, now);
	block__close(l);
	l->call_nr = nr;
	l->call_kind = kind;
	l->call_ns = now;
}

/* If the call slept, its invocation ends now. */
static __always_inline void call__exit(struct lw_loop *l, __u64 now)
{
	loop__close_missed(l, now);
	if (l->block_open && l->block.nr == l->call_nr) {
		l->block.last_in_ns = now;
		block__close(l);
	}
	l->call_ns = 0;
}

/*
 * Stacks are valid only now, while the task is still on this CPU. The kernel
 * stack skips kskip frames (3 in sched_switch's out-of-line walks: them,
 * the program and bpf_trace_run); a negative kskip takes none (a uprobe has
 * no kernel part).
 */
static __always_inline void stack__take(void *ctx, struct lw_stack_ref *st, int kskip)
{
	counter__inc(LW_CTR_STACK_WALKS);
	st->user = unwind__user_stack();
	st->kernel = kskip < 0 ? -1 :
		     bpf_get_stackid(ctx, &stacks,
				     (kskip & BPF_F_SKIP_FIELD_MASK) | BPF_F_REUSE_STACKID);
	runtimes__capture(st->rt);
}

static __always_inline void capture__take(void *ctx, struct lw_capture *cap, __u64 user_sp,
					  int kskip)
{
	stack__take(ctx, &cap->stack, kskip);
	if (bpf_probe_read_user(cap->words, sizeof(cap->words), (void *)user_sp))
		__builtin_memset(cap->words, 0, sizeof(cap->words));
}

#endif /* LOOPWATCH_ITERATION_BPF_H */
