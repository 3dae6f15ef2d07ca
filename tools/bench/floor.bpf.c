// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The floor of what loopwatch can cost: empty programs on exactly the
 * tracepoints bpf/loop.bpf.c attaches to. Whatever the kernel charges just
 * for having a program there (syscall work flag on every task, tracepoint
 * dispatch, BPF entry) shows up here; loopwatch minus this is the cost of
 * its own code. Keep this list in step with bpf/.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#define WAIT_CALL(name)						\
SEC("tracepoint/syscalls/sys_enter_" #name)			\
int enter_##name(void *ctx) { return 0; }			\
SEC("tracepoint/syscalls/sys_exit_" #name)			\
int exit_##name(void *ctx) { return 0; }

WAIT_CALL(epoll_wait)
WAIT_CALL(epoll_pwait)
WAIT_CALL(epoll_pwait2)
WAIT_CALL(poll)
WAIT_CALL(ppoll)
WAIT_CALL(select)
WAIT_CALL(pselect6)

SEC("tp_btf/sched_process_exit")
int floor_thread_exit(void *ctx)
{
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
