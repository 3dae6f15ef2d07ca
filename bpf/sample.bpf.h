/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A CPU sample of a loop thread's iteration, and the boost: a timer of a
 * CPU's that samples one iteration every boost_period_ns where the tick is
 * slow. Shared by the sampling programs (sample.bpf.c), which start a boost,
 * and the switch-in (sched.bpf.c), which restarts it where its thread comes
 * back; each program that sets the timer's callback carries its own copy.
 */
#ifndef LOOPWATCH_SAMPLE_BPF_H
#define LOOPWATCH_SAMPLE_BPF_H

#include "iteration.bpf.h"

#define CLOCK_MONOTONIC 1	/* uapi linux/time.h: not in vmlinux.h */

/*
 * Where the tick is slow (HZ 250), a loop thread's iteration past the
 * sampling gate is sampled by a timer of its CPU's every boost_period_ns;
 * 0: none (the tick is 1 ms apart or less, or perf samples).
 */
const volatile __u64 boost_period_ns __weak = 0;

/* what a sample of the timer's stands for, once it runs at its period */
#define BOOST_PERIOD_US ((__u16)(boost_period_ns / 1000))

/* A CPU's boost: a timer sampling one loop thread's iteration. */
struct boost {
	struct bpf_timer timer;
	__u64 busy_start_ns;	/* the iteration it samples; 0: idle */
	__u32 tid;
	__u8 ready;		/* the timer is made, its callback set */
	__u8 rephase;		/* its next sample after this one at a random point */
	__u16 next_us;		/* what its next sample stands for (then a period) */
};

/* by CPU: sized to the possible CPUs by userspace */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct boost);
} boosts SEC(".maps") __weak;

/* This CPU's boost. */
static __always_inline struct boost *boost__here(void)
{
	__u32 cpu = bpf_get_smp_processor_id();

	return bpf_map_lookup_elem(&boosts, &cpu);
}

/* Is boost b sampling task's iteration (l: its loop record)? */
static __always_inline bool boost__covers(const struct boost *b, struct task_struct *task,
					  const struct lw_loop *l)
{
	return b->busy_start_ns && b->tid == task->pid && l->busy_start_ns == b->busy_start_ns;
}

/*
 * Sample thread tid's iteration (l) on this CPU's timer from delay_ns on,
 * the first sample standing for us. A sample stands for the interval around
 * it, half way to its neighbours: a timer that starts right after a sample
 * of another sampler, or at a fixed delay after its thread came back, does
 * not stand for a whole period at first. rephase: the sample after the
 * first at a random point of a period (boost__phase_ns()), not a period on;
 * set before the timer is armed, which it fires with.
 */
static __always_inline void boost__start(struct boost *b, __u32 tid, const struct lw_loop *l,
					 __u64 delay_ns, __u16 us, bool rephase)
{
	b->tid = tid;
	b->busy_start_ns = l->busy_start_ns;
	b->next_us = us;
	b->rephase = rephase;
	bpf_timer_start(&b->timer, delay_ns, 0);
}

/*
 * A random point of the first period, as a free-running clock's first
 * sample would come: at a fixed delay after a switch-in, a call of 5 ms
 * after a sleep held 4 samples of 1 ms each, never 5.
 */
static __always_inline __u64 boost__phase_ns(void)
{
	return 1000 + bpf_get_prandom_u32() % boost_period_ns;
}

/*
 * A sample of the current task (l: its loop record, if it has one) at kskip
 * (stack__take's), standing for us of CPU time, after_us of it after the
 * sample: a loop thread's in its iteration, or a GIL holder's for the loop
 * threads waiting on it. The iteration's own age is left in *own (0: no
 * iteration sampled).
 *
 * An iteration's first sample stands for all of the iteration's CPU time
 * before it instead: no sample came before, because of the sampling gate,
 * and that time is anywhere from the gate to a tick (0.6 to 4.6 ms at HZ 250),
 * by where the tick falls. Half a tick was a weight that the phase of the tick
 * made too small or too large for the function the iteration began in (the
 * culprits workload's parse_request, 5 ms first: 6-9 % short in some runs).
 */
static __always_inline int sample__take(void *ctx, struct task_struct *task, struct lw_loop *l,
					 int kskip, __u16 us, __u16 after_us, __u64 *own)
{
	struct lw_stack_ref st;
	__u64 now, runq, slept, first_us;
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
	if (!seen) {
		slept = l->iter.blocked_ns + l->iter.gil_ns;
		first_us = (*own > slept ? (*own - slept) / 1000 : 0) + after_us;
		us = first_us < 0xffff ? (__u16)first_us : 0xffff;
	}
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

/*
 * The boost's timer, in softirq context on its CPU: the task it interrupted
 * is current (or ksoftirqd, when softirqs were deferred to it). Without an
 * interrupt's registers no kernel stack is taken; the user stack is the
 * task's, from the registers its entry to the kernel saved. It samples its
 * own thread's iteration, and stops when that has ended, the thread is not
 * on the CPU, or the iteration is under the sampling gate (where only the
 * stack owed a wait for a CPU started it): its switch-in or the tick starts
 * it again where it runs.
 */
static int boost__fire(void *map, __u32 *key, struct boost *b)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct lw_loop *l = loop__of(task);
	__u64 own;

	if (!l || !loop__busy(l) || !boost__covers(b, task, l))
		goto stop;
	sample__take(NULL, task, l, -1, b->next_us, b->next_us / 2, &own);
	/* a sample owed a wait's stack, under the gate: the tick starts it again past it */
	if (!own)
		goto stop;
	b->next_us = BOOST_PERIOD_US;
	bpf_timer_start(&b->timer, b->rephase ? boost__phase_ns() : boost_period_ns, 0);
	b->rephase = 0;
	return 0;
stop:
	b->busy_start_ns = 0;
	return 0;
}

/* The CPU's timer, made once, by whichever program starts it first. */
static __always_inline bool boost__ready(struct boost *b)
{
	if (b->ready)
		return true;
	if (bpf_timer_init(&b->timer, &boosts, CLOCK_MONOTONIC) ||
	    bpf_timer_set_callback(&b->timer, boost__fire))
		return false;
	b->ready = 1;
	return true;
}

#endif /* LOOPWATCH_SAMPLE_BPF_H */
