/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What crosses between the BPF Python walker (python.bpf.h) and userspace
 * (userspace/runtimes/python/python.c): the per-process layout userspace fills in, and the
 * raw stacks BPF leaves for userspace to name. Every CPython version
 * difference the walker needs is a field here, so the BPF code has no
 * per-version branches of its own. Both sides include this file.
 */
#ifndef LW_ABI_PYTHON_H
#define LW_ABI_PYTHON_H

/* frames kept per stack, innermost first; 3.12+ shims take slots too */
#define LW_PY_MAX_DEPTH 64
#define LW_PY_MAX_STACKS 4096
#define LW_PY_MAX_PROCS 1024
#define LW_PY_MAX_THREADS 64	/* thread-list fallback: tstates looked at */
#define LW_PY_WINDOW 192	/* bytes of a tstate or frame read at once */
/* glibc keeps the first 32 pthread keys inline, then blocks of 32 */
#define LW_PY_KEYS_INLINE 32
#define LW_PY_MAX_KEY 1024	/* PTHREAD_KEYS_MAX */
#define LW_PY_NO_SHIM 0x100	/* shim_owner of versions without shim frames: no byte matches */
#define LW_PY_NAME_RAW 128	/* bytes of a Task's name object kept: a str of ~80 chars */

/* struct lw_py_proc.flags */
enum lw_py_proc_flags {
	LW_PY_F_UNSUPPORTED = 1 << 0,	/* Python, but no layout: stacks are markers */
	LW_PY_F_CFRAME = 1 << 1,	/* tstate->cframe->current_frame (3.11, 3.12) */
	LW_PY_F_NATIVE_TID = 1 << 2,	/* tstate has native_thread_id (3.11+) */
};

/*
 * One CPython process, keyed by pid in "py_procs". Offsets are in bytes from
 * the start of the struct named in the comment; the walker reads
 * tstate_read/frame_read bytes of a tstate/frame at once and takes every
 * field from that copy, so each offset must lie inside it. The per-frame
 * differences are numbers, not flags, so the walk has no branches on them:
 * the verifier then sees one path per frame.
 */
struct lw_py_proc {
	__u64 runtime;		/* address of _PyRuntime */
	__u32 version;		/* major << 8 | minor */
	__u32 flags;		/* enum lw_py_proc_flags */
	/* glibc struct pthread: pthread_getspecific()'s arrays; 0 when not glibc */
	__u32 tls_inline;	/* specific_1stblock[32] of {seq, data} */
	__u32 tls_blocks;	/* specific[32], pointers to further blocks */
	/* _PyRuntimeState */
	__u32 tss_key;		/* autoTSSkey._key (a pthread key) */
	__u32 interp_main;	/* interpreters.main */
	/* PyInterpreterState */
	__u32 interp_threads;	/* tstate_head / threads.head */
	/* PyThreadState */
	__u32 tstate_read;
	__u32 tstate_next;
	__u32 tstate_thread_id;	/* pthread_self() of its thread */
	__u32 tstate_native_tid;	/* LW_PY_F_NATIVE_TID */
	__u32 tstate_frame;	/* frame, cframe (LW_PY_F_CFRAME) or current_frame */
	__u32 cframe_frame;	/* _PyCFrame.current_frame */
	/* PyFrameObject (3.8-3.10) or _PyInterpreterFrame (3.11+) */
	__u32 frame_read;
	__u32 frame_code;	/* f_code / f_executable */
	__u32 frame_back;	/* f_back / previous */
	__u32 frame_pos;	/* f_lasti, prev_instr or instr_ptr, read as 64 bits */
	__u32 pos_shift;	/* 32: the position is an int (f_lasti), sign-extend it */
	__u32 frame_owner;	/* owner byte (any byte when shim_owner is LW_PY_NO_SHIM) */
	__u32 shim_owner;	/* FRAME_OWNED_BY_CSTACK (3) in 3.12+: an eval call's shim */
	__u32 frame_is_entry;	/* is_entry byte (3.11), read under is_entry_mask */
	__u32 is_entry_mask;	/* 1 in 3.11, else 0 */
	__u32 every_entry;	/* 1: one C eval call per frame (3.8-3.10) */
	__u32 tstate_task;	/* 3.14+: asyncio_running_task in the tstate; 0: not known */
	/*
	 * The process's GIL (struct _gil_runtime_state): a loop thread asleep
	 * on a futex inside its gil_size bytes waits for the GIL. 0: not known.
	 */
	__u64 gil;
	__u32 gil_size;
	__u32 gil_holder;	/* last_holder: the PyThreadState holding it, or that last did */
	__u32 gil_locked;	/* locked: 1 while held */
	__u32 pad_gil;
	/* 3.14+: TaskObj.task_name, TaskObj.task_coro, PyGenObject.gi_name; 0: not known */
	__u32 task_name;
	__u32 task_coro;
	__u32 gen_name;
	__u32 pad_task;
};

/* One Python frame as BPF saw it; userspace reads the code object later. */
struct lw_py_frame {
	__u64 code;		/* PyCodeObject address */
	__u64 pos;		/* f_lasti sign-extended, or the instruction pointer */
};

/* struct lw_py_stack.flags */
enum lw_py_stack_flags {
	LW_PY_STACK_TRUNCATED = 1 << 0,		/* more frames than LW_PY_MAX_DEPTH */
	LW_PY_STACK_NO_TSTATE = 1 << 1,		/* thread runs no Python (or not yet) */
	LW_PY_STACK_UNSUPPORTED = 1 << 2,	/* version has no layout */
	LW_PY_STACK_READ_ERROR = 1 << 3,	/* the chain broke off: memory unreadable */
	LW_PY_STACK_THREAD_LIST = 1 << 4,	/* tstate found by the thread-list walk */
};

/* A Python stack in "py_stacks"; identical stacks share one id. */
struct lw_py_stack {
	__u32 nframes;
	__u32 flags;		/* enum lw_py_stack_flags */
	__u32 version;		/* major << 8 | minor: the layout to decode with */
	__u32 pad;
	/*
	 * Bit i: frames[i] is the outermost frame of one C-level eval call
	 * (_PyEval_EvalFrameDefault), so the splice can match each run of
	 * Python frames to the native eval frame that ran it.
	 */
	__u64 entries;
	/* bit i: frames[i] is a 3.12+ shim (FRAME_OWNED_BY_CSTACK), no code of its own */
	__u64 shims;
	__u64 task;		/* 3.14+: the thread's running asyncio Task object; 0: none */
	/*
	 * The Task's name object (a str, or the int of an unnamed "Task-N") as it
	 * was, its address and first bytes: a Task made for one request is gone,
	 * its memory reused, by the time userspace names the stack. Its
	 * coroutine's type and __name__ are the address of objects that live on.
	 */
	__u64 task_name;
	__u64 coro_type;
	__u64 coro_name;
	__u64 hash;		/* of all the above and the frames: the id is taken from it */
	__u8 task_name_raw[LW_PY_NAME_RAW];
	struct lw_py_frame frames[LW_PY_MAX_DEPTH];
};

#endif /* LW_ABI_PYTHON_H */
