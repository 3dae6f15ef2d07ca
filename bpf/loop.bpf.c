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
 * One program for the entries of all seven wait calls: collector.c attaches
 * it to each tracepoint with the call's kind as the link's cookie, so the
 * verifier checks it once, not seven times.
 */
SEC("tracepoint/syscalls/sys_enter_epoll_wait")
int wait_enter(const struct syscall_enter_ctx *ctx)
{
	return wait__enter((__u32)bpf_get_attach_cookie((void *)ctx), ctx->nr, ctx->args[0],
			   ctx->args[1], ctx->args[2]);
}

/*
 * One program for the exits of the seven wait calls and of restart_syscall,
 * where a poll/select resumed after a stop ends (its link's cookie says so).
 */
SEC("tracepoint/syscalls/sys_exit_epoll_wait")
int wait_exit(const struct syscall_exit_ctx *ctx)
{
	return wait__exit(bpf_get_attach_cookie((void *)ctx) == LW_WAIT_RESTART, ctx->nr,
			  ctx->ret);
}

/*
 * Mark and keep a copy: the task storage goes with the task, and userspace
 * still has to read the final counts (the histogram's tail stays where it
 * is, in "loop_hists", until then).
 */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(loop_thread_exit, struct task_struct *task)
{
	struct lw_loop *l = loop__of(task);
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
