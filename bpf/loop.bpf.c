// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The wait calls' per-syscall tracepoints (the hooks every kernel has), with
 * their bodies in wait.bpf.h, shared with the fentry/fexit programs of
 * hooks_fentry.bpf.c that replace them where the kernel allows it. Only the
 * wait calls' tracepoints are attached, not raw_syscalls, which would run a
 * program on every syscall of every process -- but any per-syscall
 * tracepoint still sends every syscall of every task through the kernel's
 * slow path, which a trampoline does not.
 * Also the loop records' end and their dump, whichever hooks are used.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "wait.bpf.h"

const volatile __u32 self_pid = 0;	/* loopwatch's own loop is not watched */
/* loopwatch's pid namespace (nsfs dev, inode) when not the host's: see filter.bpf.h */
const volatile __u64 self_pidns_dev = 0;
const volatile __u64 self_pidns_ino = 0;
const volatile bool filter_pid = false;
const volatile bool filter_comm = false;
const volatile __u32 ncomms = 0;
const volatile char comm_filter[LW_MAX_COMMS][LW_COMM_LEN] = {};
/* --cgroup, --service: these cgroups (v2 ids) and what is under them (levels) */
const volatile bool filter_cgroup = false;
const volatile __u32 ncgroups = 0;
const volatile __u64 cgroup_ids[LW_MAX_CGROUPS] = {};
const volatile __u32 cgroup_levels[LW_MAX_CGROUPS] = {};
/* with neither -p nor --comm: processes by these names are not watched (shells) */
const volatile __u32 nexcludes = 0;
const volatile char comm_exclude[LW_MAX_COMMS][LW_COMM_LEN] = {};
/* off: every wait call ends an iteration (--no-nested-waits) */
const volatile bool nested_waits = true;

struct syscall_enter_ctx {
	__u64 common;
	int nr;
	__u64 args[6];
};

struct syscall_exit_ctx {
	__u64 common;
	int nr;
	long ret;
};

/*
 * Which wait call a syscall number is (enum lw_call_kind, 0: none), and
 * restart_syscall's number: set by userspace (collector.c) from the
 * architecture's numbers. One program serves the entries of all seven
 * calls, one their exits, so the verifier checks each once; the number in
 * the tracepoint's record tells them apart without a helper call (a link's
 * cookie costs one on every wait call).
 */
const volatile __u8 wait_kinds[LW_WAIT_NRS] = {};
const volatile __s32 restart_nr = -1;

/*
 * bpf_task_pt_regs() is a helper call on every wait call; with
 * bpf_rdonly_cast() (Linux 6.2) the same address is task->stack plus an
 * offset that is the kernel's own (THREAD_SIZE, its padding), learnt from
 * the helper's first answer and read by plain loads after that.
 */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;
#ifndef bpf_ksym_exists		/* libbpf before 1.2 */
#define bpf_ksym_exists(sym) (!!(sym))
#endif
__u64 user_regs_off = 0;

static __always_inline struct pt_regs *task__user_regs(struct task_struct *task)
{
	__u32 id = bpf_core_type_id_kernel(struct pt_regs);
	struct pt_regs *regs, *base;
	__u64 off = user_regs_off;

	if (!bpf_ksym_exists(bpf_rdonly_cast))
		return (struct pt_regs *)bpf_task_pt_regs(task);
	if (off)
		return bpf_rdonly_cast((void *)((__u64)task->stack + off), id);
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	base = bpf_rdonly_cast(task->stack, id);
	if (regs && base)
		user_regs_off = (__u64)regs - (__u64)base;
	return regs;
}

SEC("tracepoint/syscalls/sys_enter_epoll_wait")
int wait_enter(const struct syscall_enter_ctx *ctx)
{
	__u32 kind = (__u32)ctx->nr < LW_WAIT_NRS ? wait_kinds[ctx->nr] : 0;
	struct task_struct *task;
	struct pt_regs *regs;
	__u64 args[4], sp = 0;

	if (!kind)
		return 0;
	task = bpf_get_current_task_btf();
	regs = task__user_regs(task);
	/*
	 * Only the first three arguments come from the hook: one program serves
	 * calls of three (poll) to six arguments, and the kernel lets it read no
	 * further than the shortest tracepoint's. A select's fourth (its except
	 * set) is read from the saved user registers.
	 */
	args[0] = ctx->args[0];
	args[1] = ctx->args[1];
	args[2] = ctx->args[2];
	args[3] = 0;
	if (regs) {
		sp = PT_REGS_SP(regs);
		if (kind == LW_CALL_SELECT)
			args[3] = PT_REGS_PARM4_SYSCALL(regs);
	}
	return wait__enter(task, kind, ctx->nr, args, sp);
}

/* the exits of the seven wait calls and of restart_syscall, where a resumed poll/select ends */
SEC("tracepoint/syscalls/sys_exit_epoll_wait")
int wait_exit(const struct syscall_exit_ctx *ctx)
{
	return wait__exit(bpf_get_current_task_btf(), ctx->nr == restart_nr, ctx->nr, ctx->ret);
}

/*
 * Mark and keep a copy: the task storage goes with the task, and userspace
 * still has to read the final counts (the histogram's tail stays where it
 * is, in "loop_hists", until then).
 */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(loop_thread_exit, struct task_struct *task)
{
	struct lw_loop *l = loop__of_marked(task, LOOP_TID_RECORD);
	__u32 tid;

	if (!l)
		return 0;
	l->flags |= LW_THREAD_EXITED;
	gil__abandon(l);
	tid = l->tid;
	if (bpf_map_update_elem(&loops_final, &tid, l, BPF_ANY)) {
		counter__inc(LW_CTR_EVENTS_DROPPED);
		bpf_map_delete_elem(&loop_hists, &tid);
	}
	bpf_task_storage_delete(&loops, task);
	/* the tid may be another thread's next */
	loop_tid__clear(tid, 0xff);
	__sync_fetch_and_add(&nloops, -1);
	return 0;
}

/* Every live loop record, for userspace (collector__drain_loops). */
SEC("iter/task")
int dump_loops(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct lw_hist_tail *tail;
	struct lw_loop *l;
	__u32 tid, key = 0;

	if (!task)
		return 0;
	l = loop__of(task);
	if (!l)
		return 0;
	/* the record whole: what task storage holds, then its histogram's tail */
	tid = l->tid;
	tail = bpf_map_lookup_elem(&loop_hists, &tid);
	if (!tail)
		tail = bpf_map_lookup_elem(&hist_zero, &key);
	if (!tail)
		return 0;
	bpf_seq_write(ctx->meta->seq, l, LW_LOOP_LIVE_SIZE);
	bpf_seq_write(ctx->meta->seq, tail, sizeof(*tail));
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
