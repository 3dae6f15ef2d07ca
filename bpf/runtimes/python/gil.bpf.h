/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A Python loop thread waiting for the GIL, and who held it. The wait is
 * told from the runtime, not guessed: a thread waiting for the GIL sleeps in
 * futex on the condition variable or mutex inside the interpreter's struct
 * _gil_runtime_state, whose address userspace found (lw_py_proc.gil). Who
 * held it is asked of the CPU samples: while the loop sleeps there, a sample
 * of another thread of its process that holds the GIL (locked, and
 * last_holder is the sampled thread's own PyThreadState) counts for that
 * thread, and the first such sample of an iteration walks its stack. A
 * thread that released the GIL (sleeping, in I/O, in C code that let it go)
 * is never its holder: last_holder no longer names it, or locked is 0.
 */
#ifndef LOOPWATCH_GIL_BPF_H
#define LOOPWATCH_GIL_BPF_H

#include "maps.bpf.h"
#include "runtimes/python/python.bpf.h"

#define LW_NR_FUTEX 202		/* x86_64 */

/* One Python process's loop thread asleep on its GIL, and the holders sampled. */
struct lw_gil_wait {
	__u32 loop_tid;		/* the loop thread watched; 0: none */
	__u32 waiting;		/* it sleeps on the GIL now */
	__u64 busy_start_ns;	/* of the iteration the holders are of */
	__u64 last_ns;		/* its latest sleep on the GIL began; 2 s older: free */
	__u32 n;
	__u32 samples;		/* samples that found a holder, those not kept too */
	struct lw_gil_holder holders[LW_ITER_GIL_HOLDERS];
};

/* Keyed by process: the sampled holder finds it by its own tgid. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, LW_PY_MAX_PROCS);
	__type(key, __u32);
	__type(value, struct lw_gil_wait);
} gil_waits SEC(".maps") __weak;

/*
 * Loop threads asleep on a GIL now, machine-wide: while 0, a CPU sample of a
 * task that is no loop thread costs one load, not a hash lookup. A count
 * left over (a loop thread gone in the middle of a wait) only costs lookups.
 */
__u64 gil_sleepers __weak;

/* a zeroed value to create entries from: larger than is wise on the BPF stack */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lw_gil_wait);
} gil_zero SEC(".maps") __weak;

static __always_inline struct lw_gil_wait *gil_wait__of(__u32 pid, bool create)
{
	struct lw_gil_wait *w = bpf_map_lookup_elem(&gil_waits, &pid), *z;
	__u32 zero = 0;

	if (w || !create)
		return w;
	z = bpf_map_lookup_elem(&gil_zero, &zero);
	if (!z)
		return NULL;
	bpf_map_update_elem(&gil_waits, &pid, z, BPF_NOEXIST);
	return bpf_map_lookup_elem(&gil_waits, &pid);
}

/*
 * The loop thread, in its own context, goes to sleep in futex(uaddr): on
 * its process's GIL? Then the sleep is GIL time, and the samples of the
 * process watch who holds it. The first loop thread of a process to wait
 * keeps the watch; a new iteration starts its holders afresh.
 */
static __always_inline bool gil__wait_begins(struct lw_loop *l, __s32 nr, __u64 uaddr, __u64 now)
{
	struct lw_py_proc *cfg;
	struct lw_gil_wait *w;
	__u32 pid = l->pid;

	if (nr != LW_NR_FUTEX)
		return false;
	cfg = bpf_map_lookup_elem(&py_procs, &pid);
	if (!cfg || !cfg->gil || uaddr < cfg->gil || uaddr - cfg->gil >= cfg->gil_size)
		return false;
	l->off_gil = 1;
	w = gil_wait__of(pid, true);
	if (!w)
		return true;
	if (w->loop_tid && w->loop_tid != l->tid && now - w->last_ns <= LW_CPU_WAIT_MAX_NS)
		return true;
	if (w->loop_tid != l->tid || w->busy_start_ns != l->busy_start_ns) {
		w->loop_tid = l->tid;
		w->busy_start_ns = l->busy_start_ns;
		w->n = 0;
		w->samples = 0;
	}
	w->last_ns = now;
	if (!w->waiting)
		__sync_fetch_and_add(&gil_sleepers, 1);
	w->waiting = 1;
	return true;
}

/*
 * A sleep on the GIL ended: its time is GIL time, and the holders sampled
 * so far in this iteration are the iteration's. A global function, verified
 * once (it takes the record as task storage holds it, like
 * block__close_live).
 */
__weak __noinline int gil__book_live(struct lw_loop_live *live, __u64 ns)
{
	struct lw_loop *l = (struct lw_loop *)live;
	struct lw_gil_wait *w;

	if (!l)
		return 0;
	l->off_gil = 0;
	l->iter.gil_ns += ns;
	w = gil_wait__of(l->pid, false);
	if (!w || w->loop_tid != l->tid)
		return 0;
	if (w->waiting)
		__sync_fetch_and_add(&gil_sleepers, -1);
	w->waiting = 0;
	if (w->busy_start_ns != l->busy_start_ns)
		return 0;
	l->iter.ngil_holders = w->n < LW_ITER_GIL_HOLDERS ? w->n : LW_ITER_GIL_HOLDERS;
	l->iter.gil_samples = w->samples;
	bpf_probe_read_kernel(l->iter.gil_holders, sizeof(l->iter.gil_holders), w->holders);
	return 0;
}

/* A loop thread ends asleep on the GIL (a killed process): its watch ends with it. */
static __always_inline void gil__abandon(struct lw_loop *l)
{
	struct lw_gil_wait *w;

	if (!l->off_gil)
		return;
	w = gil_wait__of(l->pid, false);
	if (!w || w->loop_tid != l->tid || !w->waiting)
		return;
	w->waiting = 0;
	__sync_fetch_and_add(&gil_sleepers, -1);
}

/*
 * A CPU sample of a task that is no loop thread: does it hold the GIL a
 * loop thread of its process sleeps on? Counted for it; returns its entry
 * when its stack is to be walked now (its first such sample in an iteration
 * past the sampling gate), else NULL. A miss costs a hash lookup.
 */
static __always_inline struct lw_gil_holder *gil__sample(struct task_struct *task)
{
	__u32 pid = task->tgid, tid = task->pid, n, i;
	struct lw_gil_holder *h;
	struct lw_py_proc *cfg;
	struct lw_gil_wait *w;
	__u32 locked = 0;
	__u64 tstate, now;

	if (!gil_sleepers)
		return NULL;
	w = gil_wait__of(pid, false);
	if (!w || !w->waiting)
		return NULL;
	now = bpf_ktime_get_ns();
	if (now - w->last_ns > LW_CPU_WAIT_MAX_NS)
		return NULL;
	cfg = bpf_map_lookup_elem(&py_procs, &pid);
	if (!cfg || !cfg->gil)
		return NULL;
	if (bpf_probe_read_user(&locked, sizeof(locked), (void *)(cfg->gil + cfg->gil_locked)) ||
	    locked != 1)
		return NULL;
	tstate = py__read_ptr(cfg->gil + cfg->gil_holder);
	/* its thread_id is pthread_self() of the thread it belongs to */
	if (!tstate || py__read_ptr(tstate + cfg->tstate_thread_id) != python__fsbase())
		return NULL;
	w->samples++;
	n = w->n;
	for (i = 0; i < LW_ITER_GIL_HOLDERS; i++) {
		if (i >= n)
			break;
		if (w->holders[i].tid == tid)
			break;
	}
	if (i >= LW_ITER_GIL_HOLDERS)
		return NULL;
	h = &w->holders[i];
	if (i >= n) {
		w->n = i + 1;
		h->tid = tid;
		h->samples = 0;
		h->stack.user = 0;
		h->stack.kernel = -1;
		__builtin_memset(h->stack.rt, 0, sizeof(h->stack.rt));
		bpf_get_current_comm(h->comm, sizeof(h->comm));
	}
	h->samples++;
	if (h->stack.user || h->stack.rt[LW_RT_PYTHON] || now - w->busy_start_ns < sample_gate_ns)
		return NULL;
	return h;
}

#endif /* LOOPWATCH_GIL_BPF_H */
