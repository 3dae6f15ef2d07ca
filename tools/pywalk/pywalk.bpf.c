// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The Python walker (bpf/runtimes/python/python.bpf.h) in the three contexts loopwatch
 * calls it from, for one process: each captured stack goes to userspace
 * with the native stacks taken at the same moment and the walk's cost.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "runtimes/python/python.bpf.h"
#include "pywalk.h"

const volatile __u32 target_pid = 0;

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__uint(value_size, 64 * sizeof(__u64));
} pw_stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} pw_events SEC(".maps");

static __always_inline void pywalk__emit(void *ctx, __u32 kind, __u64 kernel_flags)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid(), t0, t1;
	struct pywalk_event *e;
	__u32 id;

	t0 = bpf_ktime_get_ns();
	id = python__capture();
	t1 = bpf_ktime_get_ns();
	e = bpf_ringbuf_reserve(&pw_events, sizeof(*e), 0);
	if (!e)
		return;
	e->pid = pid_tgid >> 32;
	e->tid = (__u32)pid_tgid;
	e->kind = kind;
	e->py_id = id;
	e->ustack = bpf_get_stackid(ctx, &pw_stacks, BPF_F_USER_STACK);
	e->kstack = bpf_get_stackid(ctx, &pw_stacks, kernel_flags);
	e->walk_ns = t1 - t0;
	bpf_ringbuf_submit(e, 0);
}

SEC("perf_event")
int pywalk_sample(struct bpf_perf_event_data *ctx)
{
	if (bpf_get_current_pid_tgid() >> 32 != target_pid)
		return 0;
	pywalk__emit(ctx, PYWALK_SAMPLE, 0);
	return 0;
}

/* as loopwatch's capture__take: prev is current, going to sleep */
SEC("tp_btf/sched_switch")
int BPF_PROG(pywalk_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	if (prev->tgid != target_pid || preempt || !(prev_state & 0xff))
		return 0;
	pywalk__emit(ctx, PYWALK_SWITCH, 2 & BPF_F_SKIP_FIELD_MASK);
	return 0;
}

SEC("uprobe")
int pywalk_uprobe(struct pt_regs *ctx)
{
	if (bpf_get_current_pid_tgid() >> 32 != target_pid)
		return 0;
	pywalk__emit(ctx, PYWALK_UPROBE, 0);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
