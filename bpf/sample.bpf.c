// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * CPU samples (software cpu-clock, there is no PMU here) kept only for loop
 * threads inside a busy period, in the iteration's own record: a stall
 * carries the stacks taken during it and nothing else. Only iterations at
 * least sample_gate_ns old by their own time take stacks (bpf/maps.bpf.h):
 * most iterations end long before, and a sample of one then costs a
 * task-storage lookup and a clock read, not a stack walk. The first walk
 * after an iteration's longest wait for a CPU is that wait's stack too: the
 * thread resumed where it was preempted.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "iteration.bpf.h"

SEC("perf_event")
int loop_sample(struct bpf_perf_event_data *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct lw_loop *l = loop__of(task);
	struct lw_stack_ref st;
	__u64 now, runq;
	__u32 seen, slot;
	bool owed;

	if (!l) {
		struct lw_gil_holder *h = gil__sample(task);

		/* it holds the GIL a loop thread waits for: where it holds it */
		if (h)
			stack__take(ctx, &h->stack, 0);
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
	seen = l->iter.samples_seen++;
	slot = seen;
	/* past the first slots keep a uniform reservoir over the whole stall */
	if (seen >= LW_ITER_SAMPLES)
		slot = bpf_get_prandom_u32() % (seen + 1);
	if (slot >= LW_ITER_SAMPLES && !l->runq_walk_owed)
		return 0;
	stack__take(ctx, &st, 0);
	if (slot < LW_ITER_SAMPLES)
		l->iter.samples[slot] = st;
	l->last_walk = st;
	l->last_walk_busy_ns = l->busy_start_ns;
	/* the first walk after the longest wait for a CPU is where it was waited in */
	if (l->runq_walk_owed) {
		capture__set(&l->iter.runq_cap, &st);
		l->runq_walk_owed = 0;
	}
	return 0;
}
