// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The flush syscalls' tracepoints (bodies in flush.bpf.h). These per-syscall
 * tracepoints fire only on their own syscall, but as any syscall tracepoint
 * they send every syscall of every task through the kernel's slow path:
 * hooks_fentry.bpf.c replaces them where the kernel allows.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "flush.bpf.h"

struct syscall_ctx {
	__u64 common;
	int nr;
};

/* one program for the four entries, one for the exits (collector.c attaches them) */
SEC("tracepoint/syscalls/sys_enter_fsync")
int flush_enter(struct syscall_ctx *ctx)
{
	return flush__enter(ctx->nr);
}

SEC("tracepoint/syscalls/sys_exit_fsync")
int flush_exit(void *ctx)
{
	return flush__exit();
}
