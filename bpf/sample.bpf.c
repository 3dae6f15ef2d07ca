// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * CPU samples (software cpu-clock, there is no PMU here) kept only for loop
 * threads inside a busy period, in the iteration's own record: a stall
 * carries the stacks taken during it and nothing else. Only iterations at
 * least sample_gate_ns old take stacks (bpf/maps.bpf.h): most iterations
 * end long before, and a sample of one then costs a task-storage lookup
 * and a clock read, not a stack walk.
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
	__u64 runq;
	__u32 seen, slot;

	if (!l || !loop__busy(l))
		return 0;
	/*
	 * The iteration's own age: its waits for a CPU so far (the scheduler's
	 * count, current while the thread runs) are other tasks' time, and on a
	 * contended host they would age most short iterations past the gate.
	 */
	runq = task->sched_info.run_delay - l->run_delay_start;
	if (bpf_ktime_get_ns() - l->busy_start_ns < sample_gate_ns + runq)
		return 0;
	seen = l->iter.samples_seen++;
	slot = seen;
	/* past the first slots keep a uniform reservoir over the whole stall */
	if (seen >= LW_ITER_SAMPLES)
		slot = bpf_get_prandom_u32() % (seen + 1);
	if (slot >= LW_ITER_SAMPLES)
		return 0;
	l->iter.samples[slot].user = unwind__user_stack();
	l->iter.samples[slot].kernel = bpf_get_stackid(ctx, &stacks, BPF_F_REUSE_STACKID);
	l->iter.samples[slot].python = python__capture();
	l->iter.samples[slot].v8 = v8__capture();
	return 0;
}
