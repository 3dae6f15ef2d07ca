/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The V8 frames of the current thread, walked at capture time along the
 * frame pointer chain: every frame V8 generates (interpreter, Sparkplug,
 * Maglev, TurboFan, builtins) keeps rbp, and every JS frame holds its
 * JSFunction at a fixed offset below fp. Only raw words are kept; userspace
 * names them (userspace/runtimes/v8/v8name.c), checking first that the objects
 * still are what BPF saw, because a GC may move them in between.
 *
 * C++ between JS frames (an API callback such as pbkdf2Sync, a C++ builtin
 * such as JSON.stringify) need not keep rbp (OpenSSL's assembly uses it as
 * a data register), so the walk never follows rbp through it: V8 records
 * the fp of the innermost exit frame in its isolate (c_entry_fp) and every
 * entry frame saves the outer one, which is how V8's own stack iterator
 * skips C++.
 *
 * Callable from perf_event, tp_btf/sched_switch (prev is current) and
 * uprobe programs: the user registers come from the task's pt_regs. The
 * including file brings vmlinux.h first.
 */
#ifndef LOOPWATCH_V8_BPF_H
#define LOOPWATCH_V8_BPF_H

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "runtimes/v8/lw_abi_v8.h"
#include "features.bpf.h"
#include "stackstore.bpf.h"

/* fp may lie at most this far above sp: a frame chain that leaves the stack is junk */
#define LW_V8_STACK_MAX (64ULL << 20)

/* Node processes by pid, filled by userspace (LRU: pids gone age out). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, LW_V8_MAX_PROCS);
	__type(key, __u32);
	__type(value, struct lw_v8_proc);
} v8_procs SEC(".maps") __weak;

/* JS stacks by id. LRU: a stall's stacks are read within a second or two. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, LW_V8_MAX_STACKS);
	__type(key, __u32);
	__type(value, struct lw_v8_stack);
} v8_stacks SEC(".maps") __weak;

/* A stack is 2 KiB: built here, with the frame window and object heads. */
struct lw_v8_scratch {
	struct lw_v8_stack stack;
	__u64 win[LW_V8_WIN / sizeof(__u64)];
	__u64 obj[LW_V8_OBJ_READ / sizeof(__u64)];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lw_v8_scratch);
} v8_scratch SEC(".maps") __weak;

/* A word of the frame window; an offset the binary lacks reads 0. */
static __always_inline __u64 v8__win(const struct lw_v8_scratch *s, __u32 off)
{
	if (off > LW_V8_WIN - sizeof(__u64))
		return 0;
	return *(const __u64 *)((const __u8 *)s->win + off);
}

static __always_inline __u64 v8__obj(const struct lw_v8_scratch *s, __u32 off)
{
	if (off > LW_V8_OBJ_READ - sizeof(__u64))
		return 0;
	return *(const __u64 *)((const __u8 *)s->obj + off);
}

static __always_inline __u64 v8__read_u64(__u64 addr)
{
	__u64 v = 0;

	if (!addr || bpf_probe_read_user(&v, sizeof(v), (const void *)addr))
		return 0;
	return v;
}

/* A tagged heap object pointer ends in 01 (kHeapObjectTag). */
static __always_inline bool v8__is_heap(__u64 v)
{
	return (v & 3) == 1;
}

static __always_inline bool v8__is_code(const struct lw_v8_proc *cfg, __u64 pc)
{
	return (pc >= cfg->code_lo && pc < cfg->code_hi) ||
	       (pc >= cfg->blob_lo && pc < cfg->blob_hi);
}

/* The isolate this thread has entered, or 0. */
static __always_inline __u64 v8__isolate(const struct lw_v8_proc *cfg)
{
#if defined(__TARGET_ARCH_x86)
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 fsbase = BPF_CORE_READ(task, thread.fsbase), slot;
	__u32 key = cfg->pthread_key;

	if (!fsbase)
		return 0;
	if (cfg->flags & LW_V8_P_TLS_ISOLATE)
		return v8__read_u64(fsbase + cfg->tls_isolate);
	if (cfg->flags & LW_V8_P_TLS_DTV) {
		/*
		 * __tls_get_addr's lookup, as glibc lays it out on x86-64: the
		 * dtv at tcbhead_t + 8, 16-byte entries; a block not allocated
		 * (-1) only for a library loaded after the thread started.
		 */
		slot = v8__read_u64(fsbase + 8);
		slot = slot ? v8__read_u64(slot + 16 * (__u64)cfg->tls_module) : 0;
		if (!slot || slot == ~0ULL)
			return 0;
		return v8__read_u64(slot + cfg->tls_isolate);
	}
	if (!(cfg->flags & LW_V8_P_PTHREAD_KEY))
		return 0;
	/* pthread_getspecific(key) on glibc: struct pthread is at the thread pointer */
	if (key < LW_V8_KEYS_INLINE) {
		slot = fsbase + cfg->tls_inline + 16 * key;
	} else if (key < LW_V8_MAX_KEY) {
		slot = v8__read_u64(fsbase + cfg->tls_blocks + 8 * (key / LW_V8_KEYS_INLINE));
		if (!slot)
			return 0;
		slot += 16 * (key % LW_V8_KEYS_INLINE);
	} else {
		return 0;
	}
	return v8__read_u64(slot + 8);
#else
	return 0;
#endif
}

/*
 * The JSFunction's head (map, shared) and its SharedFunctionInfo's (map,
 * name_or_scope_info, script, length...): what userspace checks the SFI
 * against when it names the frame later.
 */
static __always_inline void v8__heads(const struct lw_v8_proc *cfg, struct lw_v8_scratch *s,
				      struct lw_v8_frame *f)
{
	__u64 sfi;

	if (!v8__is_heap(f->func) ||
	    bpf_probe_read_user(s->obj, LW_V8_OBJ_READ, (const void *)(f->func - 1)))
		return;
	sfi = v8__obj(s, cfg->jsfunc_shared);
	if (!v8__is_heap(sfi) ||
	    bpf_probe_read_user(s->obj, LW_V8_OBJ_READ, (const void *)(sfi - 1)))
		return;
	f->sfi = sfi;
	f->sfi_map = v8__obj(s, 0);
	f->sfi_name = v8__obj(s, cfg->sfi_name);
	f->sfi_script = v8__obj(s, cfg->sfi_script);
	f->sfi_ints = v8__obj(s, cfg->sfi_ints);
	f->flags |= LW_V8_F_HEADS;
}

/* One walk's state, for the bpf_loop callback. */
struct v8_walk {
	const struct lw_v8_proc *cfg;
	struct lw_v8_scratch *s;
	__u64 pc, fp, sp, limit;
	__u32 top, n, stopped;
};

/*
 * Frame i of the walk from (pc, fp). pc 0 means "reached through V8's own
 * records": a V8 frame. A native pc ends the walk: JS never calls C without
 * an exit frame or a fast C call record, where the walk starts. A bpf_loop
 * callback: the verifier checks the body once, not once per frame.
 */
static __always_inline long v8__step_into(__u64 i, struct v8_walk *w,
					  const struct lw_v8_proc *cfg, struct lw_v8_scratch *s)
{
	struct lw_v8_stack *st = &s->stack;
	__u64 marker, next_fp, fp = w->fp, pc = w->pc;
	struct lw_v8_frame *f;
	bool js, exit, entry;
	__u32 type;

	w->stopped = 1;
	if (i >= LW_V8_MAX_DEPTH)
		return 1;
	f = &st->frames[i & (LW_V8_MAX_DEPTH - 1)];
	if (fp < w->sp || fp >= w->limit || (fp & 7)) {
		st->flags |= LW_V8_S_BAD_FP;
		return 1;
	}
	if (pc && !v8__is_code(cfg, pc))
		return 1;
	if (bpf_probe_read_user(s->win, LW_V8_WIN, (const void *)(fp - LW_V8_WIN_BELOW))) {
		st->flags |= LW_V8_S_READ_ERROR;
		return 1;
	}
	marker = v8__win(s, cfg->fp_marker);
	/* a typed frame's marker is StackFrame::TypeToMarker(t) = t << 1 */
	type = (__u32)(marker >> 1);
	js = marker & 1;
	exit = !js && type == cfg->ft_builtin_exit;
	entry = !js && (type == cfg->ft_entry || type == cfg->ft_construct_entry);
	f->pc = pc;
	f->flags = w->top | (exit ? LW_V8_F_BUILTIN_EXIT : 0);
	f->func = v8__win(s, exit ? cfg->fp_exit_target :
			     js ? cfg->fp_function : LW_V8_NO_OFF);
	f->bytecode_array = v8__win(s, js ? cfg->fp_bytecode_array : LW_V8_NO_OFF);
	f->bytecode_offset = v8__win(s, js ? cfg->fp_bytecode_offset : LW_V8_NO_OFF);
	f->sfi = f->sfi_map = f->sfi_name = f->sfi_script = f->sfi_ints = 0;
	f->pad = 0;
	if (js && !(f->bytecode_offset & 1))
		f->flags |= LW_V8_F_BC_SMI;
	if (js || exit)
		v8__heads(cfg, s, f);
	w->n = i + 1;
	w->top = 0;
	/* an entry frame: C++ called JS here, go on at the outer exit frame above */
	next_fp = v8__win(s, entry ? cfg->fp_entry_next : LW_V8_WIN_BELOW);
	w->pc = entry ? 0 : v8__win(s, LW_V8_WIN_BELOW + 8);
	if (next_fp <= fp) {
		if (next_fp)
			st->flags |= LW_V8_S_BAD_FP;
		return 1;
	}
	w->fp = next_fp;
	w->stopped = 0;
	return 0;
}

static long v8__step(__u64 i, void *ctx)
{
	struct v8_walk *w = ctx;

	return v8__step_into(i, w, w->cfg, w->s);
}

/* v8__step without bpf_loop() (bpf/features.bpf.h): this process's layout, this CPU's scratch */
__weak __noinline int v8__step_alone(__u32 i, struct v8_walk *w)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32, zero = 0;
	struct lw_v8_scratch *s = bpf_map_lookup_elem(&v8_scratch, &zero);
	struct lw_v8_proc *cfg = bpf_map_lookup_elem(&v8_procs, &pid);

	if (!w || !s || !cfg)
		return 1;
	return (int)v8__step_into(i, w, cfg, s);
}

static __always_inline void v8__walk(const struct lw_v8_proc *cfg, struct lw_v8_scratch *s,
				     __u64 pc, __u64 fp, __u64 sp, __u32 top)
{
	struct v8_walk w = {
		.cfg = cfg, .s = s, .pc = pc, .fp = fp, .sp = sp,
		.limit = sp + LW_V8_STACK_MAX, .top = top,
	};

	lw_loop(LW_V8_MAX_DEPTH, v8__step, v8__step_alone, &w);
	if (!w.stopped)
		s->stack.flags |= LW_V8_S_TRUNCATED;
	s->stack.nframes = w.n;
}

static __always_inline __u64 v8__hash(const struct lw_v8_stack *st)
{
	__u64 h = 0xcbf29ce484222325ULL;

	h = stack__mix(h, (__u64)st->nframes << 32 | st->flags);
	h = stack__mix(h, st->top_ret);
	for (int i = 0; i < LW_V8_MAX_DEPTH; i++) {
		const struct lw_v8_frame *f = &st->frames[i];

		if (i >= st->nframes)
			break;
		h = stack__mix(h, f->pc ^ f->flags);
		h = stack__mix(h, f->func);
		h = stack__mix(h, f->sfi ^ f->sfi_name);
		h = stack__mix(h, f->bytecode_offset ^ f->bytecode_array);
	}
	return h;
}

/*
 * The current thread's JS frames, stored in v8_stacks: their id, or 0 when
 * the process is no configured node process, no JS is on the stack, or the
 * stack was lost. A global function, so the verifier checks the walk once,
 * not once per state of every caller. Where the walk starts, innermost first: C++ called from
 * JS through an exit frame (c_entry_fp), a fast C call from JS
 * (fast_c_call_caller_fp/pc), else the registers (JS running).
 */
__weak __noinline __u32 v8__capture(void)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32, zero = 0, top = 0;
	__u64 iso, cefp = 0, fcfp = 0, fcpc = 0, ip, sp, bp, pc, fp;
	struct lw_v8_scratch *s;
	struct lw_v8_proc *cfg;
	struct pt_regs *regs;

	cfg = bpf_map_lookup_elem(&v8_procs, &pid);
	if (!cfg)
		return 0;
	s = bpf_map_lookup_elem(&v8_scratch, &zero);
	if (!s)
		return 0;
	s->stack.nframes = 0;
	s->stack.flags = 0;
	s->stack.top_ret = 0;
	if (cfg->flags & LW_V8_P_UNSUPPORTED) {
		s->stack.flags = LW_V8_S_UNSUPPORTED;
		goto store;
	}
	regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	if (!regs)
		return 0;
	ip = BPF_CORE_READ(regs, ip);
	sp = BPF_CORE_READ(regs, sp);
	bp = BPF_CORE_READ(regs, bp);
	if (v8__is_code(cfg, ip)) {
		/* JS or a builtin is running: no exit frame is open above it */
		s->stack.top_ret = v8__read_u64(sp);
		pc = ip;
		fp = bp;
		top = LW_V8_F_TOP;
	} else {
		iso = v8__isolate(cfg);
		if (!iso)
			return 0;
		cefp = cfg->iso_c_entry_fp ? v8__read_u64(iso + cfg->iso_c_entry_fp) : 0;
		if (!cefp && cfg->iso_fast_c_fp) {
			fcfp = v8__read_u64(iso + cfg->iso_fast_c_fp);
			fcpc = fcfp ? v8__read_u64(iso + cfg->iso_fast_c_pc) : 0;
		}
		if (cefp) {
			s->stack.flags |= LW_V8_S_IN_EXIT;
			pc = 0;
			fp = cefp;
		} else if (fcfp) {
			s->stack.flags |= LW_V8_S_IN_FAST_C;
			pc = fcpc;
			fp = fcfp;
		} else {
			return 0;	/* native code with no JS below it */
		}
	}
	/* one call site: the verifier walks the 32 frames once, not once per start */
	v8__walk(cfg, s, pc, fp, sp, top);
	if (!top && !s->stack.nframes &&
	    !(s->stack.flags & ~(LW_V8_S_IN_EXIT | LW_V8_S_IN_FAST_C)))
		return 0;
store:
	s->stack.hash = v8__hash(&s->stack);
	return stack__store(&v8_stacks, &s->stack, s->stack.hash,
			    __builtin_offsetof(struct lw_v8_stack, hash));
}

#endif /* LOOPWATCH_V8_BPF_H */
