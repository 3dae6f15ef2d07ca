/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The CPython frame chain of the current thread, walked at capture time:
 * the chain changes as soon as the thread runs on, so it cannot be read
 * later. Only code object addresses and positions are kept; userspace
 * names them (userspace/python.c). Every version difference comes from the
 * process's struct lw_py_proc, filled in by userspace.
 *
 * Callable from perf_event, tp_btf/sched_switch (prev is current) and
 * uprobe programs. The including file brings vmlinux.h first.
 */
#ifndef LOOPWATCH_PYTHON_BPF_H
#define LOOPWATCH_PYTHON_BPF_H

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "runtimes/python/lw_abi_python.h"
#include "stackstore.bpf.h"

/*
 * CPython processes by pid, filled by userspace when a loop process appears.
 * LRU: every capture looks its process up, so live ones stay and the pids of
 * processes gone age out even if nobody deletes them.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, LW_PY_MAX_PROCS);
	__type(key, __u32);
	__type(value, struct lw_py_proc);
} py_procs SEC(".maps") __weak;

/* Python stacks by id. LRU: a stall's stacks are read within a second or two. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, LW_PY_MAX_STACKS);
	__type(key, __u32);
	__type(value, struct lw_py_stack);
} py_stacks SEC(".maps") __weak;

/* A stack is ~1 KiB: built here, not on the 512-byte BPF stack. */
struct lw_py_scratch {
	struct lw_py_stack stack;
	/* the tstate or frame being looked at; u64 so that clang loads words, not bytes */
	__u64 window[LW_PY_WINDOW / sizeof(__u64)];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lw_py_scratch);
} py_scratch SEC(".maps") __weak;

/*
 * Fields of the copied tstate or frame. Offsets come from userspace: an
 * out-of-range one reads as 0, which every caller treats as "absent".
 */
static __always_inline __u64 py__word(const struct lw_py_scratch *s, __u32 off)
{
	if (off > LW_PY_WINDOW - sizeof(__u64))
		return 0;
	return *(const __u64 *)((const __u8 *)s->window + off);
}

static __always_inline __u8 py__byte(const struct lw_py_scratch *s, __u32 off)
{
	if (off > LW_PY_WINDOW - 1)
		return 0;
	return *((const __u8 *)s->window + off);
}

/*
 * Copy len bytes of the target's object at addr into the window. One bound
 * check only: clang folds "len == 0 || len > max" into a range check the
 * verifier cannot follow, and a zero size is allowed anyway.
 */
static __always_inline bool py__fetch(struct lw_py_scratch *s, __u64 addr, __u32 len)
{
	if (!addr || len > LW_PY_WINDOW)
		return false;
	return !bpf_probe_read_user(s->window, len, (const void *)addr);
}

static __always_inline __u64 py__read_ptr(__u64 addr)
{
	__u64 v = 0;

	if (!addr || bpf_probe_read_user(&v, sizeof(v), (const void *)addr))
		return 0;
	return v;
}

/*
 * pthread_self() of the current thread: on x86_64 glibc and musl both put
 * struct pthread at the thread pointer, set once by clone(CLONE_SETTLS) or
 * arch_prctl(ARCH_SET_FS) into thread.fsbase.
 */
static __always_inline __u64 python__fsbase(void)
{
#if defined(__TARGET_ARCH_x86)
	struct task_struct *task = bpf_get_current_task_btf();

	return BPF_CORE_READ(task, thread.fsbase);
#else
	return 0;
#endif
}

/* The window holds a tstate: is it this thread's? */
static __always_inline bool python__tstate_mine(const struct lw_py_proc *cfg,
						 const struct lw_py_scratch *s, __u64 fsbase,
						 __u32 tid)
{
	if (py__word(s, cfg->tstate_thread_id) != fsbase)
		return false;
	return !(cfg->flags & LW_PY_F_NATIVE_TID) ||
	       (__u32)py__word(s, cfg->tstate_native_tid) == tid;
}

/*
 * The thread's own PyThreadState through the interpreter's TSS key, as
 * pthread_getspecific(autoTSSkey) would return it. Not the "current"
 * tstate (gilstate.tstate_current, _Py_tss_tstate): those are NULL or
 * another thread's while this one waits without the GIL, which is exactly
 * when a blocking call's stack is wanted. Leaves the tstate in the window.
 */
static __always_inline __u64 python__tstate_tss(const struct lw_py_proc *cfg,
						struct lw_py_scratch *s, __u64 fsbase, __u32 tid)
{
	__u32 key = 0;
	__u64 slot, tstate;

	if (!cfg->tls_inline)
		return 0;
	if (bpf_probe_read_user(&key, sizeof(key), (const void *)(cfg->runtime + cfg->tss_key)))
		return 0;
	if (key < LW_PY_KEYS_INLINE) {
		slot = fsbase + cfg->tls_inline + 16 * key;
	} else if (key < LW_PY_MAX_KEY) {
		slot = py__read_ptr(fsbase + cfg->tls_blocks + 8 * (key / LW_PY_KEYS_INLINE));
		if (!slot)
			return 0;
		slot += 16 * (key % LW_PY_KEYS_INLINE);
	} else {
		return 0;
	}
	/* {seq, data}: data is the tstate */
	tstate = py__read_ptr(slot + 8);
	if (!py__fetch(s, tstate, cfg->tstate_read) || !python__tstate_mine(cfg, s, fsbase, tid))
		return 0;
	return tstate;
}

/*
 * Without glibc's layout (musl, another glibc, a key not set): the main
 * interpreter's thread list, matched the same way. Slower, libc-agnostic.
 */
static __always_inline __u64 python__tstate_list(const struct lw_py_proc *cfg,
						 struct lw_py_scratch *s, __u64 fsbase, __u32 tid)
{
	__u64 interp = py__read_ptr(cfg->runtime + cfg->interp_main);
	__u64 t = py__read_ptr(interp ? interp + cfg->interp_threads : 0);

	for (int i = 0; i < LW_PY_MAX_THREADS; i++) {
		if (!py__fetch(s, t, cfg->tstate_read))
			return 0;
		if (python__tstate_mine(cfg, s, fsbase, tid))
			return t;
		t = py__word(s, cfg->tstate_next);
	}
	return 0;
}

/* The innermost frame of the tstate in the window. */
static __always_inline __u64 python__top_frame(const struct lw_py_proc *cfg,
					       const struct lw_py_scratch *s)
{
	__u64 f = py__word(s, cfg->tstate_frame);

	/* 3.11/3.12: the frame hangs off the C-level frame record */
	if (f && (cfg->flags & LW_PY_F_CFRAME))
		f = py__read_ptr(f + cfg->cframe_frame);
	return f;
}

/*
 * The running Task's name as it is now (struct lw_py_stack says why), and
 * its coroutine's type and name. A name that cannot be read whole is left
 * for userspace to read, as a Task that lives on is.
 */
static __always_inline void python__task(const struct lw_py_proc *cfg, struct lw_py_stack *st)
{
	__u64 coro = py__read_ptr(cfg->task_coro ? st->task + cfg->task_coro : 0);

	st->task_name = py__read_ptr(cfg->task_name ? st->task + cfg->task_name : 0);
	if (st->task_name && bpf_probe_read_user(st->task_name_raw, sizeof(st->task_name_raw),
						 (const void *)st->task_name))
		st->task_name = 0;
	st->coro_type = py__read_ptr(coro ? coro + 8 : 0);	/* PyObject.ob_type */
	st->coro_name = py__read_ptr(coro && cfg->gen_name ? coro + cfg->gen_name : 0);
}

static __always_inline void python__walk(const struct lw_py_proc *cfg, struct lw_py_scratch *s,
					 __u32 tid)
{
	struct lw_py_stack *st = &s->stack;
	__u64 fsbase = python__fsbase(), f, pos, entry, tstate;
	__u32 shift = cfg->pos_shift & 63, n = 0;

	if (!fsbase) {
		st->flags |= LW_PY_STACK_NO_TSTATE;
		return;
	}
	tstate = python__tstate_tss(cfg, s, fsbase, tid);
	if (!tstate) {
		tstate = python__tstate_list(cfg, s, fsbase, tid);
		if (!tstate) {
			st->flags |= LW_PY_STACK_NO_TSTATE;
			return;
		}
		st->flags |= LW_PY_STACK_THREAD_LIST;
	}
	f = python__top_frame(cfg, s);
	/* which asyncio Task runs now changes with every step: read it with the frames */
	if (cfg->tstate_task)
		st->task = py__read_ptr(tstate + cfg->tstate_task);
	if (st->task)
		python__task(cfg, st);
	/*
	 * Straight-line per frame: every version difference is arithmetic on
	 * config numbers, and shims are kept (marked) rather than skipped, so
	 * the frame index is the loop counter and the verifier walks one path
	 * per iteration.
	 */
	for (int i = 0; i < LW_PY_MAX_DEPTH; i++) {
		if (!f)
			break;
		if (!py__fetch(s, f, cfg->frame_read)) {
			st->flags |= LW_PY_STACK_READ_ERROR;
			break;
		}
		pos = py__word(s, cfg->frame_pos);
		st->frames[i].code = py__word(s, cfg->frame_code);
		st->frames[i].pos = (__u64)((__s64)(pos << shift) >> shift);
		entry = cfg->every_entry | (py__byte(s, cfg->frame_is_entry) & cfg->is_entry_mask);
		st->entries |= (entry & 1) << i;
		st->shims |= (__u64)(py__byte(s, cfg->frame_owner) == cfg->shim_owner) << i;
		f = py__word(s, cfg->frame_back);
		n = i + 1;
	}
	if (f && !(st->flags & LW_PY_STACK_READ_ERROR))
		st->flags |= LW_PY_STACK_TRUNCATED;
	/* a shim is pushed by each eval call: the frame before it was that call's first */
	st->entries |= st->shims >> 1;
	st->nframes = n;
}

static __always_inline __u64 python__hash(const struct lw_py_stack *st)
{
	__u64 h = 0xcbf29ce484222325ULL, len;
	__u32 words;

	h = stack__mix(h, (__u64)st->nframes << 32 | st->flags);
	h = stack__mix(h, st->version);
	h = stack__mix(h, st->entries);
	h = stack__mix(h, st->shims);
	h = stack__mix(h, st->task);
	h = stack__mix(h, st->task_name);
	h = stack__mix(h, st->coro_type);
	h = stack__mix(h, st->coro_name);
	/*
	 * Of the name, from its type on: an ASCII str's header and characters
	 * (its length at 16, its text at 40), an int's digits. Not the refcount,
	 * nor what lies past the object: both change at will, and a stack that
	 * hashes anew each time is named anew each time.
	 */
	len = *(const __u64 *)&st->task_name_raw[16];
	words = 5 + (len < LW_PY_NAME_RAW - 40 ? (__u32)len + 7 : LW_PY_NAME_RAW - 40) / 8;
	for (int i = 1; i < LW_PY_NAME_RAW / 8; i++) {
		if (i >= words)
			break;
		h = stack__mix(h, *(const __u64 *)&st->task_name_raw[8 * i]);
	}
	for (int i = 0; i < LW_PY_MAX_DEPTH; i++) {
		if (i >= st->nframes)
			break;
		h = stack__mix(h, st->frames[i].code);
		h = stack__mix(h, st->frames[i].pos);
	}
	return h;
}

static __always_inline __u32 python__store(struct lw_py_stack *st)
{
	st->hash = python__hash(st);
	return stack__store(&py_stacks, st, st->hash, __builtin_offsetof(struct lw_py_stack, hash));
}

/*
 * The current thread's Python stack, stored in py_stacks: its id, or 0 when
 * the process is no configured Python process (or the stack was lost).
 * A global function, verified once per program rather than at each call.
 */
__weak __noinline __u32 python__capture(void)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 pid = pid_tgid >> 32, zero = 0;
	struct lw_py_scratch *s;
	struct lw_py_proc *cfg;

	cfg = bpf_map_lookup_elem(&py_procs, &pid);
	if (!cfg)
		return 0;
	s = bpf_map_lookup_elem(&py_scratch, &zero);
	if (!s)
		return 0;
	s->stack.nframes = 0;
	s->stack.flags = 0;
	s->stack.version = cfg->version;
	s->stack.pad = 0;
	s->stack.entries = 0;
	s->stack.shims = 0;
	s->stack.task = 0;
	s->stack.task_name = 0;
	s->stack.coro_type = 0;
	s->stack.coro_name = 0;
	__builtin_memset(s->stack.task_name_raw, 0, sizeof(s->stack.task_name_raw));
	if (cfg->flags & LW_PY_F_UNSUPPORTED)
		s->stack.flags = LW_PY_STACK_UNSUPPORTED;
	else
		python__walk(cfg, s, (__u32)pid_tgid);
	return python__store(&s->stack);
}

#endif /* LOOPWATCH_PYTHON_BPF_H */
