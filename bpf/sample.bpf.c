// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * CPU samples (software cpu-clock, there is no PMU here) kept only for loop
 * threads inside a busy period, in the iteration's own record: a stall
 * carries the stacks taken during it and nothing else.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "iteration.bpf.h"

SEC("perf_event")
int loop_sample(struct bpf_perf_event_data *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct lw_loop *l = bpf_map_lookup_elem(&loops, &tid);
	__u32 seen, slot;

	if (!l || !loop__busy(l))
		return 0;
	seen = l->iter.samples_seen++;
	slot = seen;
	/* past the first slots keep a uniform reservoir over the whole stall */
	if (seen >= LW_ITER_SAMPLES)
		slot = bpf_get_prandom_u32() % (seen + 1);
	if (slot >= LW_ITER_SAMPLES)
		return 0;
	l->iter.samples[slot].user = unwind__user_stack();
	l->iter.samples[slot].kernel = bpf_get_stackid(ctx, &stacks, BPF_F_REUSE_STACKID);
	l->iter.samples[slot].python = python__capture();
	l->iter.samples[slot].v8 = v8__capture();
	return 0;
}
