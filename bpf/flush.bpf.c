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

static __always_inline int flush__enter(struct syscall_ctx *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct lw_loop *l = bpf_map_lookup_elem(&loops, &tid);

	if (!l || !loop__busy(l))
		return 0;
	call__enter(l, ctx->nr, LW_CALL_FLUSH, bpf_ktime_get_ns());
	return 0;
}

static __always_inline int flush__exit(void)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct lw_loop *l = bpf_map_lookup_elem(&loops, &tid);

	if (l && l->call_ns)
		call__exit(l, bpf_ktime_get_ns());
	return 0;
}

#define FLUSH_CALL(name)						\
SEC("tracepoint/syscalls/sys_enter_" #name)				\
int flush_enter_##name(struct syscall_ctx *ctx) { return flush__enter(ctx); } \
SEC("tracepoint/syscalls/sys_exit_" #name)				\
int flush_exit_##name(void *ctx) { return flush__exit(); }

FLUSH_CALL(fsync)
FLUSH_CALL(fdatasync)
FLUSH_CALL(sync_file_range)
FLUSH_CALL(syncfs)
