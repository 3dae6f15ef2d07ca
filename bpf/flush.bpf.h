/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Exact bounds for the flush syscalls. The scheduler sees an fsync only from
 * its first sleep on, missing the CPU time spent queueing the writeback, and
 * cannot tell two back-to-back flushes apart: entry and exit close the
 * invocation exactly. Flushes are rare and slow. The bodies of the flush
 * hooks, shared by the syscall tracepoint programs (flush.bpf.c) and the
 * fentry/fexit ones (hooks_fentry.bpf.c).
 */
#ifndef LOOPWATCH_FLUSH_BPF_H
#define LOOPWATCH_FLUSH_BPF_H

#include "iteration.bpf.h"

/* A flush syscall (number nr) enters. */
static __always_inline int flush__enter(__s32 nr)
{
	struct lw_loop *l = loop__current();

	if (!l || !loop__busy(l))
		return 0;
	call__enter(l, nr, LW_CALL_FLUSH, bpf_ktime_get_ns());
	return 0;
}

/* A flush syscall returns. */
static __always_inline int flush__exit(void)
{
	struct lw_loop *l = loop__current();

	if (l && l->call_ns)
		call__exit(l, bpf_ktime_get_ns());
	return 0;
}

#endif
