// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Timing of catalogued CPU-heavy functions (JSON encoders and decoders, zlib,
 * pickle, regex, KDFs) with a uprobe and a uretprobe each; the probe's id is
 * its bpf_cookie. A uprobe hit costs ~11 us here, so only once-per-operation
 * entry points are probed. Nested probes (json-c, cJSON, jansson call each
 * other) count once: only the outermost call of a thread is timed.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "iteration.bpf.h"
#include "filter.bpf.h"

/* a call older than this with no return seen was unwound past (longjmp) */
#define LW_PROBE_STALE_NS (60ULL * 1000000000ULL)

const volatile __u64 probe_threshold_ns = 1000000;

struct probe_thread {
	__u64 start_ns;
	__u64 sp;		/* stack pointer at the outermost entry */
	__u32 id;
	__u32 depth;
};

/* LRU: threads churn; a lost entry only costs one call's timing. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, struct probe_thread);
} probe_threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, struct lw_probe_key);
	__type(value, struct lw_probe_stats);
} probe_stats SEC(".maps");

/* Never written: the zeroed value new probe_stats entries start from. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lw_probe_stats);
} probe_zero SEC(".maps");

static __always_inline int probe__enter(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), now = bpf_ktime_get_ns(), sp = PT_REGS_SP(ctx);
	__u32 tid = (__u32)id;
	struct probe_thread *t = bpf_map_lookup_elem(&probe_threads, &tid), fresh = {};

	/*
	 * Inside an outer call only the depth grows. An entry at or above the
	 * outer call's stack pointer means the outer call left without a
	 * return (an exception, longjmp): start afresh rather than stay stuck.
	 */
	if (t && t->depth && sp < t->sp && now - t->start_ns < LW_PROBE_STALE_NS) {
		t->depth++;
		return 0;
	}
	/* probes fire in every process that maps the file: only watched ones count */
	if (!process__wanted(bpf_get_current_task_btf(), id >> 32))
		return 0;
	fresh.start_ns = now;
	fresh.sp = sp;
	fresh.id = (__u32)bpf_get_attach_cookie(ctx);
	fresh.depth = 1;
	bpf_map_update_elem(&probe_threads, &tid, &fresh, BPF_ANY);
	return 0;
}

static __always_inline void probe__account(__u32 pid, __u32 id, __u64 ns, bool in_busy,
					   const char *comm)
{
	struct lw_probe_key key = { .pid = pid, .id = id };
	struct lw_probe_stats *st = bpf_map_lookup_elem(&probe_stats, &key);
	unsigned int idx = lw_hist_bucket(ns);
	__u32 zero = 0;

	if (!st) {
		struct lw_probe_stats *z = bpf_map_lookup_elem(&probe_zero, &zero);

		if (!z)
			return;
		bpf_map_update_elem(&probe_stats, &key, z, BPF_NOEXIST);
		st = bpf_map_lookup_elem(&probe_stats, &key);
		if (!st)
			return;
		bpf_probe_read_kernel_str(st->comm, LW_COMM_LEN, comm);
	}
	/* threads of one process share the entry from different CPUs */
	__sync_fetch_and_add(&st->calls, 1);
	__sync_fetch_and_add(&st->total_ns, ns);
	if (in_busy)
		__sync_fetch_and_add(&st->busy_ns, ns);
	if (ns > st->max_ns)
		st->max_ns = ns;
	if (idx < LW_HIST_BUCKETS)
		__sync_fetch_and_add(&st->hist.counts[idx], 1);
}

static __always_inline void iter__add_probe(struct lw_iter *it, __u32 id, __u64 ns)
{
	__u32 n = it->nprobes;

	for (int i = 0; i < LW_ITER_PROBES; i++) {
		if (i >= n)
			break;
		if (it->probes[i].id == id) {
			it->probes[i].count++;
			it->probes[i].ns += ns;
			return;
		}
	}
	if (n >= LW_ITER_PROBES)
		return;
	it->probes[n].id = id;
	it->probes[n].count = 1;
	it->probes[n].ns = ns;
	it->nprobes = n + 1;
}

static __always_inline void probe__emit(void *ctx, __u32 pid, __u32 tid, __u32 id, __u64 start,
					__u64 ns)
{
	struct lw_probe_event *e = events__reserve(sizeof(*e), LW_EV_PROBE);

	if (!e)
		return;
	e->pid = pid;
	e->tid = tid;
	e->id = id;
	e->start_ns = start;
	e->duration_ns = ns;
	/* at the return: the stack of whoever called the probed function */
	capture__take(ctx, &e->cap, PT_REGS_SP((struct pt_regs *)ctx), -1);
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	bpf_ringbuf_submit(e, LW_RB_LAZY);
}

static __always_inline int probe__leave(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), now = bpf_ktime_get_ns(), ns;
	__u32 tid = (__u32)id, pid = id >> 32;
	struct probe_thread *t = bpf_map_lookup_elem(&probe_threads, &tid);
	struct lw_loop *l;
	char comm[LW_COMM_LEN];
	bool in_busy;

	if (!t || !t->depth)
		return 0;
	if (--t->depth)
		return 0;
	ns = now - t->start_ns;
	l = loop__current();
	in_busy = l && loop__busy(l);
	if (in_busy)
		iter__add_probe(&l->iter, t->id, ns);
	bpf_get_current_comm(comm, sizeof(comm));
	probe__account(pid, t->id, ns, in_busy, comm);
	if (ns >= probe_threshold_ns)
		probe__emit(ctx, pid, tid, t->id, t->start_ns, ns);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(probe_entry)
{
	return probe__enter(ctx);
}

SEC("uretprobe")
int BPF_KRETPROBE(probe_return)
{
	return probe__leave(ctx);
}

/*
 * The same, for uprobe_multi links (kernel 6.6+): one link holds every
 * probed function of a file in a process. Their attach type is set before
 * load where the kernel has them (kernel/collector.c); else they stay
 * unloaded and the pair above serves, a link per function.
 */
SEC("uprobe")
int BPF_KPROBE(probe_entry_multi)
{
	return probe__enter(ctx);
}

SEC("uretprobe")
int BPF_KRETPROBE(probe_return_multi)
{
	return probe__leave(ctx);
}
