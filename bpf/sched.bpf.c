// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Where a busy period's time goes, from the scheduler alone: every switch of
 * a loop thread is seen without tracing any syscall. Off CPU and sleeping is
 * blocked time, runnable but waiting for a CPU is run-queue time; on-CPU
 * time is what is left. A sleep's saved user registers name the syscall.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "sample.bpf.h"
#include "fd.bpf.h"

/* sleeps of one invocation (fsync waits on several I/Os) are this close */
#define LW_BLOCK_MERGE_NS 2000000ULL

static __always_inline bool block__same(const struct lw_block *b, __s32 nr, __u64 arg0,
					__u64 ip, __u64 sp, __u64 now)
{
	return b->start_ns && b->nr == nr && b->arg0 == arg0 && b->user_ip == ip &&
	       b->user_sp == sp && now - b->last_in_ns < LW_BLOCK_MERGE_NS;
}

/*
 * The kernel frames a walk from sched_switch skips to start at __schedule:
 * the out-of-line function taking it, the program, bpf_trace_run.
 */
#define LW_SWITCH_KSKIP_OUT_OF_LINE 3

/* A loop thread goes to sleep inside its busy period: which call, from where. */
static __noinline void block__note_sleep(void *ctx, struct lw_loop *l,
					      struct task_struct *task, __u64 now)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
	__u64 arg0, ip, sp;
	bool in_call;
	__s64 fd;
	__s32 nr;

	if (!regs)
		return;
	nr = (__s32)regs->orig_ax;
	arg0 = regs->di;
	ip = regs->ip;
	sp = regs->sp;
	/* waiting for the GIL is no call of its own: the call before it ends */
	if (gil__wait_begins(l, nr, arg0, now)) {
		block__close(l);
		return;
	}
	if (block__same(&l->block, nr, arg0, ip, sp, now)) {
		l->block.sleeps++;
		return;
	}
	block__close(l);
	/* a syscall timed from its entry (a flush, a nested wait): its true start */
	in_call = l->call_ns && l->call_nr == nr;
	l->block.start_ns = in_call ? l->call_ns : now;
	l->block_open = 1;
	l->block.last_in_ns = now;
	l->block.nr = nr;
	l->block.arg0 = arg0;
	l->block.user_ip = ip;
	l->block.user_sp = sp;
	l->block.sleeps = 1;
	capture__take(ctx, &l->block.cap, sp, LW_SWITCH_KSKIP_OUT_OF_LINE);
	l->block.wait.nfds = 0;
	fd = (__s64)arg0;
	if (in_call && l->call_kind != LW_CALL_FLUSH) {
		/* a wait call's first argument is no fd to name (a poll's array) */
		l->block.wait = l->call_wait;
		fd = l->call_wait.nfds ? l->call_wait.fds[0] : -1;
	}
	fd__info(task, fd, &l->block.fd);
}

/* a walk costs microseconds: out of line, like every cold path of the hooks */
static __noinline void loop__walk_preempted(void *ctx, struct lw_loop *l,
					    struct task_struct *prev)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(prev);

	if (regs) {
		capture__take(ctx, &l->preempt_cap, regs->sp, LW_SWITCH_KSKIP_OUT_OF_LINE);
		l->preempt_walked = 1;
	}
}

/* __TASK_STOPPED, __TASK_TRACED (include/linux/sched.h; macros, not in BTF) */
#define LW_TASK_STOPPED_OR_TRACED 0x000c

static __always_inline void loop__switch_out(void *ctx, struct lw_loop *l,
					     struct task_struct *prev, bool preempt,
					     unsigned int prev_state, __u64 now)
{
	/* TASK_RUNNING (0) without preemption is a yield: still runnable */
	bool sleeping = !preempt && (prev_state & 0xff) != 0;

	loop__close_missed(l, now);
	/*
	 * A stop (SIGSTOP, a ptrace attach) makes an epoll wait return -EINTR,
	 * where poll is restarted: the loop was idle and still is; its busy
	 * period resumes, shifted by the stop, when it runs again.
	 */
	if ((l->flags & LW_THREAD_INTERRUPTED) && !preempt &&
	    (prev_state & LW_TASK_STOPPED_OR_TRACED)) {
		l->flags |= LW_THREAD_STOPPED;
		l->in_wait = 1;
		l->wait_enter_ns = now;
		return;
	}
	if (sleeping)
		loop_tid__set(l->tid, LOOP_TID_ASLEEP);
	l->off_ns = now;
	l->off_pcount = prev->sched_info.pcount;
	l->wake_ns = 0;
	l->off_blocked = sleeping;
	l->off_gil = 0;
	l->preempt_walked = 0;
	l->off_cfs_rq = 0;
	/*
	 * A sleep's stack is taken now: its call is what the thread waits in,
	 * and a thread that never wakes (a deadlock) must still be named. A
	 * preemption takes one only in an iteration half way to a stall (else
	 * loop__switch_in owes it to the next sample).
	 */
	if (sleeping) {
		block__note_sleep(ctx, l, prev, now);
		return;
	}
	counter__inc(LW_CTR_PREEMPTIONS);
	l->off_run_delay = prev->sched_info.run_delay;
	l->off_throttled_clock = cfs__throttled_clock(prev, &l->off_cfs_rq);
	cpu_wait__begin(l, now);
	/* half way to a stall already: this wait's stack now, exactly where it stopped */
	if (runq__walk_wanted(l, now))
		loop__walk_preempted(ctx, l, prev);
}

/*
 * With samples at a slow tick (the default where HZ is 250), the boost follows
 * its thread (bpf/sample.bpf.c): back on a CPU inside an iteration past the
 * sampling gate, it is sampled every boost_period_ns again from here, not
 * from the next tick, 4 ms away, after which its last millisecond before a
 * wait call would go unsampled. Its first sample comes at a random point of
 * the first period (boost__phase_ns()). A long wait for a CPU (an eighth of
 * the slow threshold) still owed its stack gets a sample right after this
 * switch: the timer fires once the switch is done, and the thread's user
 * registers are still those its preemption saved. That sample stands for
 * next to no CPU time, and the periodic ones start at a random point after
 * it: a fixed period after it, a 1 ms burn after a starved wait was sampled
 * once or never as it ended a little after the period or before (-12 % for
 * the culprits workload's starved function in some runs).
 */
#define LW_BOOST_RESUMED_NS 1000

static __always_inline void boost__follow(struct lw_loop *l, struct task_struct *next,
					  __u64 now, bool owed)
{
	struct boost *b;

	if (!boost_period_ns)
		return;
	if (now - l->busy_start_ns < sample_gate_ns + l->iter.runq_ns &&
	    !(owed && runq__walk_wanted(l, now)))
		return;
	b = boost__here();
	if (!b || !boost__ready(b))
		return;
	/*
	 * Still armed here for this very iteration (it did not fire while the
	 * thread was away, as the tick trusts too): its next sample comes within
	 * a period, as a new phase's would. A restart reprograms the CPU's timer,
	 * a hypervisor exit in a VM: a loop handing the GIL back and forth paid
	 * ~0.5 us more a switch (tools/bench/cost.py's gil section).
	 */
	if (!owed && boost__covers(b, next, l))
		return;
	if (owed)
		boost__start(b, next->pid, l, LW_BOOST_RESUMED_NS, 1, true);
	else
		boost__start(b, next->pid, l, boost__phase_ns(), BOOST_PERIOD_US, false);
}

static __always_inline void loop__switch_in(struct lw_loop *l, struct task_struct *next,
					    __u64 now)
{
	/*
	 * The waits for a CPU seen here are summed as they happen: a stuck
	 * iteration's live parts are then those its end will report (which also
	 * takes the scheduler's own count, where that is more).
	 */
	if (l->off_blocked) {
		l->iter.runq_ns += now - loop__book_sleep(l, now);
		if (l->block_open)
			l->block.last_in_ns = now;
		l->off_ns = 0;
		loop_tid__clear(l->tid, LOOP_TID_ASLEEP);
		boost__follow(l, next, now, false);
		return;
	}
	runq__wait_ended(l, now - l->off_ns);
	runq__book_throttled(l, next, now);
	cpu_wait__end(l, now);
	boost__follow(l, next, now, l->runq_walk_owed && now - l->off_ns >= slow_threshold_ns / 8);
	l->off_ns = 0;
}

/* Back from a stop that interrupted the home wait: the stop was idle time. */
static __always_inline void loop__resume(struct lw_loop *l, __u64 now)
{
	__u64 stopped = now - l->wait_enter_ns;

	l->idle_ns += stopped;
	l->busy_start_ns += stopped;
	l->in_wait = 0;
	l->flags &= ~LW_THREAD_STOPPED;
}

/*
 * Runs on every context switch of the machine: a task that is no loop thread
 * costs a load (no task storage at all) or two (its byte in loop_tids), and
 * the CPU's wait table a per-CPU lookup and a load; the clock is read only
 * when a loop thread is involved or waits for this CPU.
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(loop_sched_switch, bool preempt, struct task_struct *prev,
	     struct task_struct *next, unsigned int prev_state)
{
	struct lw_loop *lp = loop__of_marked(prev, LOOP_TID_RECORD);
	struct lw_loop *ln = loop__of_marked(next, LOOP_TID_RECORD);
#if LW_TIMING_ONLY
	__u64 t = 0;

	if (lp && loop__busy(lp)) {
		t = bpf_ktime_get_ns();
		lp->off_ns = t;
		lp->off_blocked = !preempt && (prev_state & 0xff);
	}
	if (!ln || !ln->off_ns)
		return 0;
	if (!t)
		t = bpf_ktime_get_ns();
	if (ln->off_blocked)
		ln->iter.blocked_ns += t - ln->off_ns;
	else
		ln->iter.runq_ns += t - ln->off_ns;
	ln->off_ns = 0;
	return 0;
#endif
	__u64 now = cpu_wait__charge(prev);

	if (lp && loop__busy(lp)) {
		if (!now)
			now = bpf_ktime_get_ns();
		loop__switch_out(ctx, lp, prev, preempt, prev_state, now);
	}
	if (!ln || !(ln->off_ns || (ln->flags & LW_THREAD_STOPPED)))
		return 0;
	if (!now)
		now = bpf_ktime_get_ns();
	/*
	 * Back on a CPU more often than the switches seen say: a switch-out and
	 * its switch-in went unseen in between, and the thread ran meanwhile.
	 */
	if (ln->off_ns && next->sched_info.pcount != ln->off_pcount) {
		runq__book_throttled(ln, next, now);
		loop__close_missed(ln, now);
	} else if (ln->off_ns) {
		loop__switch_in(ln, next, now);
	} else {
		loop__resume(ln, now);
	}
	return 0;
}

/*
 * A loop thread asleep inside an iteration is woken: its sleep ends now, and
 * who woke it. sched_waking, not sched_wakeup: it runs in the waker's own
 * context (sched_wakeup may run later on the sleeper's CPU, from an IPI),
 * and one program a wake-up costs every task of the machine a load or two
 * (loop__of_marked(): only a thread asleep inside an iteration is looked
 * up). The waker: the task calling the wake-up, with its kernel stack, which
 * says whether an interrupt did it instead (a timer, a device: the task it
 * interrupted had nothing to do with it; preempt_count would say so, but it
 * is a per-CPU variable the kernel resolves only with CONFIG_KALLSYMS_ALL,
 * and an interrupt from user mode runs on the task's own stack). Only a
 * sleep of block_threshold_ns or more is kept, and walks that stack: the
 * walk is the cost, like a CPU sample's.
 */
SEC("tp_btf/sched_waking")
int BPF_PROG(loop_sched_wakeup, struct task_struct *p)
{
	struct lw_loop *l = loop__of_marked(p, LOOP_TID_ASLEEP);
	struct task_struct *waker;
	struct lw_neighbour w = {};
	__u64 now, from;

	if (!l || !l->off_ns || !l->off_blocked || l->wake_ns)
		return 0;
	now = bpf_ktime_get_ns();
	l->wake_ns = now;
	/* the GIL's holder, not its waker, kept it: the samples name that one */
	if (l->off_gil)
		return 0;
	from = l->off_ns > l->busy_start_ns ? l->off_ns : l->busy_start_ns;
	if (now < from || now - from < block_threshold_ns)
		return 0;
	w.ns = now - from;
	waker = bpf_get_current_task_btf();
	w.tid = waker->pid;
	w.pid = waker->tgid;
	bpf_get_current_comm(w.comm, sizeof(w.comm));
	/*
	 * Its user stack too once the iteration's sleeps reach half the slow
	 * threshold: then the wake-up ends a wait that makes a stall. From an
	 * interrupt it is the interrupted task's; userspace drops it when the
	 * kernel stack says so. 2: this program and bpf_trace_run.
	 */
	if (l->iter.blocked_ns + w.ns >= slow_threshold_ns / 2) {
		stack__take(ctx, &w.stack, 2);
	} else {
		w.stack.kernel = bpf_get_stackid(ctx, &stacks, 2 | BPF_F_REUSE_STACKID);
		counter__inc(LW_CTR_STACK_WALKS);
	}
	party__add(l->iter.wakers, &l->iter.nwakers, LW_ITER_WAKERS, &w);
	return 0;
}
