// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Loop iterations from the wait calls alone. Only the per-syscall
 * tracepoints of the wait calls are attached, so every other syscall of
 * every process pays next to nothing (raw_syscalls would tax them all).
 * busy = return of one wait call -> entry of the next; idle = inside it.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "iteration.bpf.h"

const volatile __u32 self_pid = 0;	/* loopwatch's own loop is not watched */
const volatile bool filter_pid = false;
const volatile bool filter_comm = false;
const volatile char comm_filter[LW_COMM_LEN] = {};

static __always_inline bool comm__equal(const char *a, const volatile char *b)
{
	for (int i = 0; i < LW_COMM_LEN; i++) {
		if (a[i] != b[i])
			return false;
		if (!a[i])
			return true;
	}
	return true;
}

static __always_inline bool loop__wanted(struct task_struct *task, __u32 pid)
{
	char comm[LW_COMM_LEN];

	if (pid == self_pid)
		return false;
	if (filter_pid && !bpf_map_lookup_elem(&pid_filter, &pid))
		return false;
	if (filter_comm) {
		BPF_CORE_READ_STR_INTO(&comm, task, group_leader, comm);
		if (!comm__equal(comm, comm_filter))
			return false;
	}
	return true;
}

/*
 * Once per new loop thread: userspace reads the process's mappings while it
 * surely lives, so a stall just before exit can still be symbolized.
 */
static __always_inline void loop__announce(__u32 pid, __u32 tid)
{
	struct lw_new_loop_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e) {
		counter__inc(LW_CTR_EVENTS_DROPPED);
		return;
	}
	e->type = LW_EV_NEW_LOOP;
	e->pid = pid;
	e->tid = tid;
	e->pad = 0;
	bpf_ringbuf_submit(e, 0);
}

static __always_inline struct lw_loop *loop__create(__u32 pid, __u32 tid)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct lw_loop *tmpl;
	__u32 zero = 0;

	if (!loop__wanted(task, pid))
		return NULL;
	tmpl = bpf_map_lookup_elem(&loop_scratch, &zero);
	if (!tmpl)
		return NULL;
	/*
	 * Only the header of the scratch record is ever written, so everything
	 * from preempt_cap on stays zero (a memset of 12 KiB is not possible).
	 */
	__builtin_memset(tmpl, 0, offsetof(struct lw_loop, preempt_cap));
	tmpl->pid = pid;
	tmpl->tid = tid;
	tmpl->start_ns = BPF_CORE_READ(task, start_time);
	BPF_CORE_READ_STR_INTO(&tmpl->comm, task, group_leader, comm);
	bpf_get_current_comm(&tmpl->thread, sizeof(tmpl->thread));
	if (bpf_map_update_elem(&loops, &tid, tmpl, BPF_ANY))
		counter__inc(LW_CTR_LOOPS_FULL);
	loop__announce(pid, tid);
	return bpf_map_lookup_elem(&loops, &tid);
}

static __always_inline void stall__emit(struct lw_loop *l, __u64 now, __u64 busy_ns)
{
	struct lw_stall_event *e;

	if (busy_ns >= stall_threshold_ns)
		l->stalls++;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		counter__inc(LW_CTR_EVENTS_DROPPED);
		return;
	}
	e->type = LW_EV_STALL;
	e->pid = l->pid;
	e->tid = l->tid;
	e->pad = 0;
	e->start_ns = now - busy_ns;
	e->duration_ns = busy_ns;
	__builtin_memcpy(e->comm, l->comm, LW_COMM_LEN);
	bpf_get_current_comm(e->thread, sizeof(e->thread));
	bpf_probe_read_kernel(&e->iter, sizeof(e->iter), &l->iter);
	bpf_ringbuf_submit(e, 0);
}

/* The iteration ended at now: account it, report it if it stalled, start afresh. */
static __always_inline void loop__end_iteration(struct lw_loop *l, __u64 now)
{
	__u64 busy_ns = now - l->busy_start_ns;
	unsigned int idx = lw_hist_bucket(busy_ns);

	block__close(l);
	if (busy_ns >= slow_threshold_ns)
		stall__emit(l, now, busy_ns);
	l->blocked_ns += l->iter.blocked_ns;
	l->runq_ns += l->iter.runq_ns;
	l->iter.blocked_ns = 0;
	l->iter.runq_ns = 0;
	l->iter.samples_seen = 0;
	l->iter.nsyscalls = 0;
	l->iter.nblocks = 0;
	l->iter.nprobes = 0;
	l->iter.runq_max_ns = 0;

	l->iterations++;
	l->busy_ns += busy_ns;
	if (busy_ns > l->max_busy_ns)
		l->max_busy_ns = busy_ns;
	if (idx < LW_HIST_BUCKETS)
		l->busy_hist.counts[idx]++;
}

static __always_inline int wait__enter(void)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id, pid = id >> 32;
	__u64 now = bpf_ktime_get_ns();
	struct lw_loop *l;

	l = bpf_map_lookup_elem(&loops, &tid);
	if (l && (l->flags & LW_THREAD_EXITED)) {
		/* the tid was reused before userspace reaped the old record */
		bpf_map_delete_elem(&loops, &tid);
		l = NULL;
	}
	if (!l) {
		l = loop__create(pid, tid);
		if (!l)
			return 0;
	}
	if (l->busy_start_ns && !l->in_wait)
		loop__end_iteration(l, now);
	l->in_wait = 1;
	l->wait_enter_ns = now;
	return 0;
}

/* the kernel's "restart the call" codes (include/linux/errno.h) */
#define ERESTARTSYS 512
#define ERESTARTNOINTR 513
#define ERESTARTNOHAND 514
#define ERESTART_RESTARTBLOCK 516

struct syscall_exit_ctx {
	__u64 common;
	int nr;
	long ret;
};

static __always_inline int wait__exit(long ret)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 now = bpf_ktime_get_ns();
	struct lw_loop *l;

	l = bpf_map_lookup_elem(&loops, &tid);
	if (!l || !l->in_wait)
		return 0;
	l->idle_ns += now - l->wait_enter_ns;
	/*
	 * A stop/continue, a ptrace attach or a signal with SA_RESTART: the
	 * kernel resumes the very same wait (restart_syscall, or re-executing
	 * it). Still waiting: no busy period starts here.
	 */
	if (ret == -ERESTARTSYS || ret == -ERESTARTNOINTR || ret == -ERESTARTNOHAND ||
	    ret == -ERESTART_RESTARTBLOCK) {
		l->wait_enter_ns = now;
		if (ret == -ERESTART_RESTARTBLOCK)
			l->flags |= LW_THREAD_RESTARTING;
		return 0;
	}
	l->flags &= ~LW_THREAD_RESTARTING;
	l->in_wait = 0;
	l->busy_start_ns = now;
	return 0;
}

#define WAIT_CALL(name)							\
SEC("tracepoint/syscalls/sys_enter_" #name)				\
int enter_##name(void *ctx) { return wait__enter(); }			\
SEC("tracepoint/syscalls/sys_exit_" #name)				\
int exit_##name(struct syscall_exit_ctx *ctx) { return wait__exit(ctx->ret); }

WAIT_CALL(epoll_wait)
WAIT_CALL(epoll_pwait)
WAIT_CALL(epoll_pwait2)
WAIT_CALL(poll)
WAIT_CALL(ppoll)
WAIT_CALL(select)
WAIT_CALL(pselect6)

/* A poll/select resumed after a stop ends here, not at its own exit. */
SEC("tracepoint/syscalls/sys_exit_restart_syscall")
int exit_restart_syscall(struct syscall_exit_ctx *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct lw_loop *l = bpf_map_lookup_elem(&loops, &tid);

	if (l && (l->flags & LW_THREAD_RESTARTING))
		wait__exit(ctx->ret);
	return 0;
}

/* Mark, don't delete: userspace still has to read the final counts. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(loop_thread_exit, struct task_struct *task)
{
	__u32 tid = BPF_CORE_READ(task, pid);
	struct lw_loop *l = bpf_map_lookup_elem(&loops, &tid);

	if (l)
		l->flags |= LW_THREAD_EXITED;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
