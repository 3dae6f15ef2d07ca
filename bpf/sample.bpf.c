// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * CPU samples kept only for loop threads inside a busy period, in the
 * iteration's own record: a stall carries the stacks taken during it and
 * nothing else. Only iterations at least sample_gate_ns old by their own time
 * take stacks (bpf/maps.bpf.h): most iterations end long before, and a sample
 * of one then costs a task-storage lookup and a clock read, not a stack walk.
 * The first walk after an iteration's longest wait for a CPU is that wait's
 * stack too: the thread resumed where it was preempted.
 *
 * The samples come from perf's cpu-clock (loop_sample), or with --sample-hz
 * tick from the scheduler tick (loop_tick, HZ a second on a busy CPU): the
 * tick interrupts every busy CPU anyway, while a cpu-clock event adds a timer
 * interrupt of its own to every CPU at its rate. In a VM each of those exits
 * to the hypervisor: at 997 Hz they cost a saturated aiohttp ~5 us of CPU a
 * request here (docs/cost.md).
 *
 * Where the tick is slow (HZ 250: 4 ms apart) an iteration that is becoming a
 * stall gets samples of its own: once the tick finds it a quarter of the way
 * to the slow threshold by its own time, a timer on its CPU samples it every
 * boost_period_ns until it ends or leaves the CPU. Only iterations that old
 * pay those interrupts, so a 20 ms stall still holds ~19 samples while the
 * short iterations of a saturated service add none.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "iteration.bpf.h"

/* the tick's hrtimer function (kernel/time/tick-sched.c): renamed in Linux 6.10 */
extern const void tick_nohz_handler __ksym __weak;
extern const void tick_sched_timer __ksym __weak;

#define CLOCK_MONOTONIC 1	/* uapi linux/time.h: not in vmlinux.h */

/* the boost's period; 0: none (the tick is 1 ms apart or less, or perf samples) */
const volatile __u64 boost_period_ns = 0;
/* the tick's period, or perf's, in us: what a sample of theirs stands for */
const volatile __u16 sample_us = 1003;

/* A CPU's boost: a timer sampling one loop thread's iteration. */
struct boost {
	struct bpf_timer timer;
	__u64 busy_start_ns;	/* the iteration it samples; 0: idle */
	__u32 tid;
	__u32 ready;		/* the timer is initialised */
};

/* by CPU: sized to the possible CPUs by userspace */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct boost);
} boosts SEC(".maps");

/*
 * A sample of the current task (l: its loop record, if it has one) at kskip
 * (stack__take's), standing for us of CPU time: a loop thread's in its
 * iteration, or a GIL holder's for the loop threads waiting on it. The
 * iteration's own age is left in *own (0: no iteration sampled).
 */
static __always_inline int sample__take(void *ctx, struct task_struct *task, struct lw_loop *l,
					 int kskip, __u16 us, __u64 *own)
{
	struct lw_stack_ref st;
	__u64 now, runq;
	__u32 seen, slot;
	bool owed;

	*own = 0;
	if (!l) {
		struct lw_gil_holder *h = gil__sample(task);

		/* it holds the GIL a loop thread waits for: where it holds it */
		if (h)
			stack__take(ctx, &h->stack, kskip);
		return 0;
	}
	if (!loop__busy(l))
		return 0;
	/*
	 * The iteration's own age: its waits for a CPU so far (the scheduler's
	 * count, current while the thread runs) are other tasks' time, and on a
	 * contended host they would age most short iterations past the gate. A
	 * long wait for a CPU is owed its stack all the same.
	 */
	now = bpf_ktime_get_ns();
	runq = task->sched_info.run_delay - l->run_delay_start;
	owed = l->runq_walk_owed && runq__walk_wanted(l, now);
	if (now - l->busy_start_ns < sample_gate_ns + runq && !owed)
		return 0;
	*own = now - l->busy_start_ns - runq;
	seen = l->iter.samples_seen++;
	slot = seen;
	/* past the first slots keep a uniform reservoir over the whole stall */
	if (seen >= LW_ITER_SAMPLES)
		slot = bpf_get_prandom_u32() % (seen + 1);
	if (slot >= LW_ITER_SAMPLES && !l->runq_walk_owed)
		return 0;
	stack__take(ctx, &st, kskip);
	if (slot < LW_ITER_SAMPLES) {
		l->iter.samples[slot] = st;
		l->iter.sample_us[slot] = us;
	}
	l->last_walk = st;
	l->last_walk_busy_ns = l->busy_start_ns;
	/* the first walk after the longest wait for a CPU is where it was waited in */
	if (l->runq_walk_owed) {
		capture__set(&l->iter.runq_cap, &st);
		l->runq_walk_owed = 0;
	}
	return 0;
}

/* perf's regs are the interrupted ones: a sample in user mode has no kernel stack */
SEC("perf_event")
int loop_sample(struct bpf_perf_event_data *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 own;

	return sample__take(ctx, task, loop__of(task), 0, sample_us, &own);
}

/*
 * The boost's timer, in softirq context on its CPU: the task it interrupted
 * is current (or ksoftirqd, when softirqs were deferred to it). Without an
 * interrupt's registers no kernel stack is taken; the user stack is the
 * task's, from the registers its entry to the kernel saved. It samples its
 * own thread's iteration, and stops when that has ended or the thread is
 * not on the CPU: the tick starts it again where it runs.
 */
static int boost__fire(void *map, __u32 *key, struct boost *b)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct lw_loop *l;
	__u64 own;

	if (task->pid != b->tid)
		goto stop;
	l = loop__of(task);
	if (!l || !loop__busy(l) || l->busy_start_ns != b->busy_start_ns)
		goto stop;
	sample__take(NULL, task, l, -1, (__u16)(boost_period_ns / 1000), &own);
	bpf_timer_start(&b->timer, boost_period_ns, 0);
	return 0;
stop:
	b->busy_start_ns = 0;
	return 0;
}

/* Is boost b sampling task's iteration (l: its loop record)? */
static __always_inline bool boost__covers(const struct boost *b, struct task_struct *task,
					  const struct lw_loop *l)
{
	return b->busy_start_ns && b->tid == task->pid && l->busy_start_ns == b->busy_start_ns;
}

/* From the tick: this CPU's loop thread is a quarter of the way to a stall. */
static __always_inline void boost__start(struct boost *b, struct task_struct *task,
					 const struct lw_loop *l)
{
	if (!b->ready) {
		if (bpf_timer_init(&b->timer, &boosts, CLOCK_MONOTONIC))
			return;
		b->ready = 1;
	}
	b->tid = task->pid;
	b->busy_start_ns = l->busy_start_ns;
	bpf_timer_set_callback(&b->timer, boost__fire);
	bpf_timer_start(&b->timer, boost_period_ns, 0);
}

/*
 * Every hrtimer of the machine expires here; the tick's runs its function
 * (userspace uses this program only where the kernel's BTF has one of them
 * and the tick is an hrtimer: high-resolution timers). The kernel stack is
 * taken whole, the interrupt's own frames on top: userspace cuts them off
 * (how many there are differs between kernels and paths), and nothing is left
 * of a sample in user mode.
 */
SEC("tp_btf/hrtimer_expire_entry")
int BPF_PROG(loop_tick, struct hrtimer *timer)
{
	const void *fn = timer->function;
	struct task_struct *task;
	struct boost *b = NULL;
	struct lw_loop *l;
	__u32 cpu;
	__u64 own;

	if (!fn || (fn != &tick_nohz_handler && fn != &tick_sched_timer))
		return 0;
	task = bpf_get_current_task_btf();
	l = loop__of(task);
	if (boost_period_ns && l) {
		cpu = bpf_get_smp_processor_id();
		b = bpf_map_lookup_elem(&boosts, &cpu);
		/* its own timer samples this iteration: the tick's would be a second */
		if (b && boost__covers(b, task, l))
			return 0;
	}
	sample__take(ctx, task, l, 0, sample_us, &own);
	if (b && own >= slow_threshold_ns / 4)
		boost__start(b, task, l);
	return 0;
}
