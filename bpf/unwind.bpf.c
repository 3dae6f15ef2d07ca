// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The user stack of the current task, unwound in the kernel from per-file
 * unwind tables that userspace builds from each ELF file's call-frame
 * information (.eh_frame, .debug_frame) and writes here: every capture
 * (CPU samples, blocking calls, preemptions, probed calls) gets the callers
 * of code built without frame pointers (Debian's python3 and libraries).
 *
 * Per frame: the executable mapping of pc, its file's rows (a page index
 * narrows the binary search), the rule (CFA = rsp|rbp + off, the return
 * address at CFA - 8, rbp saved at CFA + off or kept). A mapping without a
 * table (JIT code, a table that did not fit, a process not set up) is
 * walked with frame pointers and the frames found so are marked; a rule
 * the walker does not evaluate stops the walk and says so.
 *
 * Each binary search is a global function taking scalars: the verifier
 * checks it once on its own. Inlined into the bpf_loop callback, their
 * bounded loops multiply its states past the 1M-instruction limit.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "lw_abi_unwind.h"
#include "features.bpf.h"
#include "stackstore.bpf.h"
#include "unwind.bpf.h"

/* below mmap_min_addr and above the canonical user half nothing is code */
#define UW_MIN_ADDR 4096ULL
#define UW_MAX_ADDR (1ULL << 47)
/* a frame pointer further than this above sp is no frame of this stack */
#define UW_MAX_FRAME_BYTES (8ULL << 20)

/* Every file's rows, back to back; written by userspace through mmap, sized before load. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lw_uw_row);
} uw_rows SEC(".maps");

/* Every file's page index, back to back, likewise. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lw_uw_page);
} uw_pages SEC(".maps");

/* pid -> its slot in uw_procs; a process without one is walked with frame pointers */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, LW_UW_MAX_PROCS);
	__type(key, __u32);
	__type(value, __u32);
} uw_slots SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LW_UW_MAX_PROCS);
	__type(key, __u32);
	__type(value, struct lw_uw_proc);
} uw_procs SEC(".maps");

/* Unwound stacks by id. LRU: a stall's stacks are read within a second or two. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, LW_UW_MAX_STACKS);
	__type(key, __u32);
	__type(value, struct lw_user_stack);
} user_stacks SEC(".maps");

/* This capture's stack and pending uretprobes: per CPU, the walk runs with preemption off. */
struct uw_scratch {
	struct lw_user_stack stack;
	__u64 tramp;		/* the uretprobe trampoline; 0: none pending */
	__u32 nret;
	__u32 pad;
	struct {
		__u64 stack;	/* where the return address was */
		__u64 orig;	/* what it was */
	} ret[LW_UW_MAX_RETPROBES];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct uw_scratch);
} uw_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lw_uw_stats);
} uw_stats SEC(".maps");

struct uw_walk {
	__u64 pc;
	__u64 sp;
	__u64 bp;
	__u64 fp_mask;
	__u32 slot;		/* LW_UW_MAX_PROCS: the process has no mapping table */
	__u32 n;
	__u32 stop;
	__u32 pad;
	struct lw_user_stack *out;
};

/* The index in uw_procs[slot].maps of the mapping holding pc, or -1. */
__noinline int unwind__find_map(__u32 slot, __u64 pc)
{
	struct lw_uw_proc *proc = bpf_map_lookup_elem(&uw_procs, &slot);
	__u32 lo = 0, hi, mid;

	if (!proc)
		return -1;
	hi = proc->nmaps;
	if (hi > LW_UW_MAX_MAPS)
		return -1;
	for (int i = 0; i < LW_UW_MAP_STEPS && lo < hi; i++) {
		mid = (lo + hi) / 2;
		if (proc->maps[mid & (LW_UW_MAX_MAPS - 1)].start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || pc >= proc->maps[(lo - 1) & (LW_UW_MAX_MAPS - 1)].end)
		return -1;
	return (int)lo - 1;
}

/* The row in force at the link-time address rel among rows[lo, hi): the last with pc <= rel. */
__noinline __s64 unwind__find_row(__u32 lo, __u32 hi, __u32 rel)
{
	struct lw_uw_row *r;
	__u32 first = lo, mid;

	for (int i = 0; i < LW_UW_ROW_STEPS && lo < hi; i++) {
		mid = lo + (hi - lo) / 2;
		r = bpf_map_lookup_elem(&uw_rows, &mid);
		if (!r)
			return -1;
		if (r->pc <= rel)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == first)
		return -1;
	return lo - 1;
}

/*
 * The rows to search for rel in a file with a page index, [lo, hi) packed
 * as hi << 32 | lo; 0 when rel is before the file's code.
 */
__noinline __u64 unwind__page_range(__u32 page_start, __u32 page_count, __u32 text_lo,
				    __u32 rel)
{
	struct lw_uw_page *pg;
	__u32 p, idx;

	if (rel < text_lo || !page_count)
		return 0;
	p = (rel - text_lo) >> LW_UW_PAGE_SHIFT;
	if (p >= page_count)
		p = page_count - 1;
	idx = page_start + p;
	pg = bpf_map_lookup_elem(&uw_pages, &idx);
	if (!pg)
		return 0;
	return ((__u64)(pg->last + 1) << 32) | pg->first;
}

/*
 * A pending uretprobe replaced the return address at addr with its
 * trampoline; the kernel keeps the original in the task's return
 * instances. loopwatch's own probes do this to every stack under a probed
 * function.
 */
__noinline __u64 unwind__ret_fix(__u64 ra, __u64 addr)
{
	struct uw_scratch *s;
	__u32 zero = 0;

	s = bpf_map_lookup_elem(&uw_scratch, &zero);
	if (!s || !s->tramp || ra != s->tramp)
		return ra;
	for (int i = 0; i < LW_UW_MAX_RETPROBES; i++) {
		if (i >= s->nret)
			break;
		/* chained instances share the slot: the one that is not the trampoline */
		if (s->ret[i].stack == addr && s->ret[i].orig != s->tramp)
			return s->ret[i].orig;
	}
	return ra;
}

static __always_inline long walk__stop(struct uw_walk *w, __u32 why)
{
	w->stop = why;
	return 1;
}

/* No CFI here: trust rbp only if it points into the stack just above sp. */
static __always_inline long walk__frame_pointer(struct uw_walk *w, __u32 n)
{
	__u64 bp = w->bp, ra, next_bp;

	if (!bp)
		return walk__stop(w, LW_UW_STOP_END);	/* the root of a frame-pointer chain */
	if (bp < w->sp || bp - w->sp > UW_MAX_FRAME_BYTES || (bp & 7))
		return walk__stop(w, LW_UW_STOP_FP);
	if (bpf_probe_read_user(&ra, sizeof(ra), (void *)(bp + 8)) ||
	    bpf_probe_read_user(&next_bp, sizeof(next_bp), (void *)bp))
		return walk__stop(w, LW_UW_STOP_READ);
	if (n + 1 < LW_UW_MAX_FRAMES)
		w->fp_mask |= 1ULL << (n + 1);
	w->sp = bp + 16;
	w->bp = next_bp;
	w->pc = unwind__ret_fix(ra, bp + 8);
	return 0;
}

/* The rule of the CFI row at idx; 1 when the walk ends, -1 when there is no CFI after all. */
static __always_inline long walk__cfi(struct uw_walk *w, __u32 idx)
{
	struct lw_uw_row *r = bpf_map_lookup_elem(&uw_rows, &idx);
	__u64 cfa, ra, bp = w->bp;

	if (!r)
		return -1;
	switch (r->type) {
	case LW_UW_ROW_RSP:
		cfa = w->sp + (__s64)r->cfa_off;
		break;
	case LW_UW_ROW_RBP:
		cfa = w->bp + (__s64)r->cfa_off;
		break;
	case LW_UW_ROW_PLT:
		cfa = w->sp + 8 + ((w->pc & 15) >= 11 ? 8 : 0);
		break;
	case LW_UW_ROW_END:
		return walk__stop(w, LW_UW_STOP_END);
	case LW_UW_ROW_NONE:
		return -1;
	default:
		return walk__stop(w, LW_UW_STOP_UNSUP);
	}
	if (cfa <= w->sp)
		return walk__stop(w, LW_UW_STOP_BAD_FRAME);
	if (bpf_probe_read_user(&ra, sizeof(ra), (void *)(cfa - 8)))
		return walk__stop(w, LW_UW_STOP_READ);
	if (r->rbp_off8 &&
	    bpf_probe_read_user(&bp, sizeof(bp), (void *)(cfa + (__s64)r->rbp_off8 * 8)))
		return walk__stop(w, LW_UW_STOP_READ);
	w->sp = cfa;
	w->bp = bp;
	w->pc = unwind__ret_fix(ra, cfa - 8);
	return 0;
}

static __always_inline long walk__step_into(struct uw_walk *w, struct lw_user_stack *out)
{
	struct lw_uw_proc *proc;
	struct lw_uw_map *m;
	__u64 lookup, range;
	/* a copy: a global function's memory is no map key on older kernels (6.1) */
	__u32 n = w->n, rel, slot = w->slot;
	__s64 found = -1;
	long ret = -1;
	int mi;

	if (n >= LW_UW_MAX_FRAMES)
		return walk__stop(w, LW_UW_STOP_DEPTH);
	out->pcs[n & (LW_UW_MAX_FRAMES - 1)] = w->pc;
	w->n = n + 1;
	/* a return address: the call is the instruction before it */
	lookup = n ? w->pc - 1 : w->pc;
	proc = bpf_map_lookup_elem(&uw_procs, &slot);
	mi = proc ? unwind__find_map(slot, lookup) : -1;
	if (proc && mi >= 0) {
		m = &proc->maps[mi & (LW_UW_MAX_MAPS - 1)];
		rel = (__u32)(lookup - m->bias);
		if (!(m->flags & LW_UW_MAP_CFI)) {
			found = -1;
		} else if (m->page_count) {
			range = unwind__page_range(m->page_start, m->page_count, m->text_lo, rel);
			if (range)
				found = unwind__find_row((__u32)range, range >> 32, rel);
		} else {
			found = unwind__find_row(m->row_start, m->row_start + m->row_count, rel);
		}
		if (found >= 0)
			ret = walk__cfi(w, (__u32)found);
	}
	if (ret < 0)
		ret = walk__frame_pointer(w, n);
	if (ret)
		return ret;
	if (!w->pc)
		return walk__stop(w, LW_UW_STOP_END);
	if (w->pc < UW_MIN_ADDR || w->pc >= UW_MAX_ADDR)
		return walk__stop(w, LW_UW_STOP_BAD_FRAME);
	return 0;
}

static long walk__step(__u32 i, void *ctx)
{
	struct uw_walk *w = ctx;

	return walk__step_into(w, w->out);
}

/* walk__step without bpf_loop() (bpf/features.bpf.h): the stack it fills is this CPU's */
__noinline int walk__step_alone(__u32 i, struct uw_walk *w)
{
	struct uw_scratch *s;
	__u32 zero = 0;

	s = bpf_map_lookup_elem(&uw_scratch, &zero);
	if (!w || !s)
		return 1;
	return (int)walk__step_into(w, &s->stack);
}

/* The return addresses pending uretprobes replaced, for unwind__ret_fix. */
static __always_inline void scratch__retprobes(struct uw_scratch *s, struct task_struct *task)
{
	struct return_instance *ri = BPF_CORE_READ(task, utask, return_instances);

	s->tramp = 0;
	s->nret = 0;
	if (!ri)
		return;
	s->tramp = BPF_CORE_READ(task, mm, uprobes_state.xol_area, vaddr);
	for (int i = 0; i < LW_UW_MAX_RETPROBES && ri; i++) {
		s->ret[i].stack = BPF_CORE_READ(ri, stack);
		s->ret[i].orig = BPF_CORE_READ(ri, orig_ret_vaddr);
		s->nret = i + 1;
		ri = BPF_CORE_READ(ri, next);
	}
}

static __always_inline __u64 user_stack__hash(const struct lw_user_stack *st)
{
	__u64 h = 0xcbf29ce484222325ULL;

	h = stack__mix(h, (__u64)st->nframes << 32 | st->stop);
	h = stack__mix(h, st->fp_mask);
	for (int i = 0; i < LW_UW_MAX_FRAMES; i++) {
		if (i >= st->nframes)
			break;
		h = stack__mix(h, st->pcs[i]);
	}
	return h;
}

__noinline __u32 unwind__user_stack(void)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 zero = 0, pid = bpf_get_current_pid_tgid() >> 32, *slot;
	struct lw_user_stack *st;
	struct lw_uw_stats *stats;
	struct uw_walk w = {};
	struct uw_scratch *s;
	struct pt_regs *regs;
	__u64 t0;

	s = bpf_map_lookup_elem(&uw_scratch, &zero);
	if (!s)
		return 0;
	st = &s->stack;
	st->nframes = 0;
	st->stop = LW_UW_STOP_NO_REGS;
	st->fp_mask = 0;
	if (!BPF_CORE_READ(task, mm))
		goto store;
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	w.pc = BPF_CORE_READ(regs, ip);
	w.sp = BPF_CORE_READ(regs, sp);
	w.bp = BPF_CORE_READ(regs, bp);
	slot = bpf_map_lookup_elem(&uw_slots, &pid);
	w.slot = slot ? *slot : LW_UW_MAX_PROCS;
	w.out = st;
	t0 = bpf_ktime_get_ns();
	scratch__retprobes(s, task);
	lw_loop(LW_UW_MAX_FRAMES + 1, walk__step, walk__step_alone, &w);
	st->nframes = w.n;
	st->stop = w.stop;
	st->fp_mask = w.fp_mask;
	stats = bpf_map_lookup_elem(&uw_stats, &zero);
	if (stats) {
		stats->stacks++;
		stats->ns += bpf_ktime_get_ns() - t0;
		stats->frames += w.n;
		stats->fp_frames += __builtin_popcountll(w.fp_mask);
	}
store:
	st->hash = user_stack__hash(st);
	return stack__store(&user_stacks, st, st->hash,
			    __builtin_offsetof(struct lw_user_stack, hash));
}
