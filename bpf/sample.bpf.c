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
 * The samples come from the scheduler tick (loop_tick, HZ a second on a busy
 * CPU), or with --sample-hz HZ from perf's cpu-clock (loop_sample): the tick
 * interrupts every busy CPU anyway, while a cpu-clock event adds a timer
 * interrupt of its own to every CPU at its rate. In a VM each of those exits
 * to the hypervisor: at 997 Hz they cost a saturated aiohttp ~5 us of CPU a
 * request here (docs/cost.md).
 *
 * Where the tick is slow (HZ 250: 4 ms apart) an iteration that may become a
 * stall gets samples of its own: once the tick finds it past the sampling
 * gate by its own time, a timer on its CPU samples it every boost_period_ns
 * until it ends or leaves the CPU, and again from its switch-in when it comes
 * back (bpf/sched.bpf.c). Only iterations that old pay those interrupts, so
 * a 20 ms stall holds ~19 samples while the short iterations of a saturated
 * service add none. Each sample stands for the interval around it: the
 * tick's for a tick, the timer's for its period, and where one takes over
 * from the other, half of each; an iteration's first for all of its CPU
 * time before it (bpf/sample.bpf.h).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "sample.bpf.h"

/* the tick's hrtimer function (kernel/time/tick-sched.c): renamed in Linux 6.10 */
extern const void tick_nohz_handler __ksym __weak;
extern const void tick_sched_timer __ksym __weak;

/* the tick's period, or perf's, in us: what a sample of theirs stands for */
const volatile __u16 sample_us = 1003;

/* perf's regs are the interrupted ones: a sample in user mode has no kernel stack */
SEC("perf_event")
int loop_sample(struct bpf_perf_event_data *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 own;

	return sample__take(ctx, task, loop__of(task), 0, sample_us, sample_us / 2, &own);
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
	bool boosting;
	__u64 own;

	if (!fn || (fn != &tick_nohz_handler && fn != &tick_sched_timer))
		return 0;
	task = bpf_get_current_task_btf();
	l = loop__of(task);
	if (boost_period_ns && l) {
		b = boost__here();
		/* its own timer samples this iteration: the tick's would be a second */
		if (b && boost__covers(b, task, l))
			return 0;
	}
	/*
	 * Past the sampling gate the boost samples it every boost_period_ns
	 * from here: this sample stands for half a tick before it and half a
	 * period after it (without a boost, the whole tick around it).
	 */
	boosting = b && boost__ready(b);
	sample__take(ctx, task, l, 0, boosting ? (sample_us + BOOST_PERIOD_US) / 2 : sample_us,
		     boosting ? BOOST_PERIOD_US / 2 : sample_us / 2, &own);
	if (boosting && own >= sample_gate_ns)
		boost__start(b, task->pid, l, boost_period_ns, BOOST_PERIOD_US, false);
	return 0;
}
