// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The floor of what loopwatch can cost: empty programs at exactly the points
 * loopwatch attaches to (bpf/loop.bpf.c, bpf/flush.bpf.c, bpf/sched.bpf.c,
 * bpf/sample.bpf.c, bpf/probes.bpf.c). Whatever the kernel charges just for
 * having a program there (the syscall-work flag on every task, tracepoint
 * dispatch, BPF entry, sampling interrupts, uprobe traps) shows up here;
 * loopwatch minus this is the cost of its own code. Keep the list in step
 * with bpf/.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#define SYSCALL(name)						\
SEC("tracepoint/syscalls/sys_enter_" #name)			\
int enter_##name(void *ctx) { return 0; }			\
SEC("tracepoint/syscalls/sys_exit_" #name)			\
int exit_##name(void *ctx) { return 0; }

/* the wait calls: loop iterations */
SYSCALL(epoll_wait)
SYSCALL(epoll_pwait)
SYSCALL(epoll_pwait2)
SYSCALL(poll)
SYSCALL(ppoll)
SYSCALL(select)
SYSCALL(pselect6)

/* the flush calls: exact bounds of a blocking fsync */
SYSCALL(fsync)
SYSCALL(fdatasync)
SYSCALL(sync_file_range)
SYSCALL(syncfs)

/* a wait resumed after a stop ends in restart_syscall */
SEC("tracepoint/syscalls/sys_exit_restart_syscall")
int exit_restart_syscall(void *ctx)
{
	return 0;
}

SEC("tp_btf/sched_process_exit")
int floor_process_exit(void *ctx)
{
	return 0;
}

SEC("tp_btf/sched_switch")
int floor_sched_switch(void *ctx)
{
	return 0;
}

SEC("tp_btf/sched_waking")
int floor_sched_waking(void *ctx)
{
	return 0;
}

/* with -F 0: every hrtimer's expiry, the tick's among them (--sample-hz tick) */
SEC("tp_btf/hrtimer_expire_entry")
int floor_tick(void *ctx)
{
	return 0;
}

/* attached by floor.c to a cpu-clock event per CPU, not by the skeleton */
SEC("perf_event")
int floor_sample(void *ctx)
{
	return 0;
}

/* attached by floor.c to the functions given with -u, like loopwatch's probes */
SEC("uprobe")
int floor_probe_entry(void *ctx)
{
	return 0;
}

SEC("uretprobe")
int floor_probe_return(void *ctx)
{
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
