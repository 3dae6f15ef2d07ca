// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Exact bounds for the flush syscalls. The scheduler sees an fsync only from
 * its first sleep on, missing the CPU time spent queueing the writeback, and
 * cannot tell two back-to-back flushes apart. These per-syscall tracepoints
 * fire only on their own syscall (other syscalls pay ~0-25 ns), and flushes
 * are rare and slow: entry and exit close the invocation exactly.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "iteration.bpf.h"

struct syscall_ctx {
	__u64 common;
	int nr;
};

/* one program for the four entries, one for the exits (collector.c attaches them) */
SEC("tracepoint/syscalls/sys_enter_fsync")
int flush_enter(struct syscall_ctx *ctx)
{
	struct lw_loop *l = loop__current();

	if (!l || !loop__busy(l))
		return 0;
	call__enter(l, ctx->nr, LW_CALL_FLUSH, bpf_ktime_get_ns());
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_fsync")
int flush_exit(void *ctx)
{
	struct lw_loop *l = loop__current();

	if (l && l->call_ns)
		call__exit(l, bpf_ktime_get_ns());
	return 0;
}
