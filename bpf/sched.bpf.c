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
#include "iteration.bpf.h"

/* sleeps of one invocation (fsync waits on several I/Os) are this close */
#define LW_BLOCK_MERGE_NS 2000000ULL

static __always_inline bool block__same(const struct lw_block *b, __s32 nr, __u64 arg0,
					__u64 ip, __u64 sp, __u64 now)
{
	return b->start_ns && b->nr == nr && b->arg0 == arg0 && b->user_ip == ip &&
	       b->user_sp == sp && now - b->last_in_ns < LW_BLOCK_MERGE_NS;
}

/* The dentry names of fd in task's table, leaf first; empty when it is no open fd. */
static __always_inline void fd__path(struct task_struct *task, __u64 fd,
				     char path[LW_PATH_PARTS][LW_PATH_PART_LEN])
{
	struct fdtable *fdt = BPF_CORE_READ(task, files, fdt);
	struct dentry *d, *parent;
	struct file *file = NULL;

	/* the previous call's names must not show through a shorter path */
	for (int i = 0; i < LW_PATH_PARTS; i++)
		path[i][0] = '\0';
	if (!fdt || fd >= BPF_CORE_READ(fdt, max_fds))
		return;
	bpf_probe_read_kernel(&file, sizeof(file), BPF_CORE_READ(fdt, fd) + fd);
	if (!file)
		return;
	d = BPF_CORE_READ(file, f_path.dentry);
	for (int i = 0; i < LW_PATH_PARTS; i++) {
		path[i][0] = '\0';
		if (!d)
			break;
		bpf_probe_read_kernel_str(path[i], LW_PATH_PART_LEN, BPF_CORE_READ(d, d_name.name));
		parent = BPF_CORE_READ(d, d_parent);
		if (parent == d)
			break;
		d = parent;
	}
}

/* A loop thread goes to sleep inside its busy period: which call, from where. */
static __always_inline void block__note_sleep(void *ctx, struct lw_loop *l,
					      struct task_struct *task, __u64 now)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
	__u64 arg0, ip, sp;
	__s32 nr;

	if (!regs)
		return;
	nr = (__s32)BPF_CORE_READ(regs, orig_ax);
	arg0 = BPF_CORE_READ(regs, di);
	ip = BPF_CORE_READ(regs, ip);
	sp = BPF_CORE_READ(regs, sp);
	if (block__same(&l->block, nr, arg0, ip, sp, now)) {
		l->block.sleeps++;
		return;
	}
	block__close(l);
	/* a traced flush syscall: its entry is the invocation's true start */
	l->block.start_ns = l->flush_ns && l->flush_nr == nr ? l->flush_ns : now;
	l->block.last_in_ns = now;
	l->block.nr = nr;
	l->block.arg0 = arg0;
	l->block.user_ip = ip;
	l->block.user_sp = sp;
	l->block.sleeps = 1;
	capture__take(ctx, &l->block.cap, sp, 2);
	fd__path(task, arg0, l->block.path);
}

static __always_inline void loop__switch_out(void *ctx, struct lw_loop *l,
					     struct task_struct *prev, bool preempt,
					     unsigned int prev_state, __u64 now)
{
	/* TASK_RUNNING (0) without preemption is a yield: still runnable */
	bool sleeping = !preempt && (prev_state & 0xff) != 0;

	l->off_ns = now;
	l->wake_ns = 0;
	l->off_blocked = sleeping;
	if (sleeping) {
		block__note_sleep(ctx, l, prev, now);
		return;
	}
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(prev);

	if (regs)
		capture__take(ctx, &l->preempt_cap, BPF_CORE_READ(regs, sp), 2);
}

static __always_inline void loop__switch_in(struct lw_loop *l, __u64 now)
{
	__u64 off = now - l->off_ns, blocked = 0, runq = off;

	if (l->off_blocked) {
		blocked = off;
		runq = 0;
		if (l->wake_ns >= l->off_ns && l->wake_ns <= now) {
			blocked = l->wake_ns - l->off_ns;
			runq = now - l->wake_ns;
		}
		if (l->block.start_ns)
			l->block.last_in_ns = now;
	}
	l->iter.blocked_ns += blocked;
	l->iter.runq_ns += runq;
	if (!l->off_blocked && runq > l->iter.runq_max_ns) {
		l->iter.runq_max_ns = runq;
		bpf_probe_read_kernel(&l->iter.runq_cap, sizeof(l->iter.runq_cap),
				      &l->preempt_cap);
	}
	l->off_ns = 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(loop_sched_switch, bool preempt, struct task_struct *prev,
	     struct task_struct *next, unsigned int prev_state)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 prev_tid = prev->pid, next_tid = next->pid;
	struct lw_loop *l;

	l = bpf_map_lookup_elem(&loops, &prev_tid);
	if (l && loop__busy(l))
		loop__switch_out(ctx, l, prev, preempt, prev_state, now);
	l = bpf_map_lookup_elem(&loops, &next_tid);
	if (l && l->off_ns)
		loop__switch_in(l, now);
	return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(loop_sched_wakeup, struct task_struct *p)
{
	__u32 tid = p->pid;
	struct lw_loop *l = bpf_map_lookup_elem(&loops, &tid);

	if (l && l->off_ns && l->off_blocked && !l->wake_ns)
		l->wake_ns = bpf_ktime_get_ns();
	return 0;
}
