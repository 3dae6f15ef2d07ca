/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Python frames: which processes run CPython and how to walk them
 * (python__detect fills the struct lw_py_proc the BPF walker reads), what
 * the walked stacks say (python__symbolize names code objects by reading
 * the target's memory), and one stack out of the native and the Python
 * frames (python__splice). Supported: CPython 3.8-3.12 on x86_64 from a
 * table of measured layouts, 3.13+ (3.13, 3.14, 3.15: any patch level or
 * distro build) from the _Py_DebugOffsets the process publishes.
 */
#ifndef LOOPWATCH_SYMBOLS_PYTHON_H
#define LOOPWATCH_SYMBOLS_PYTHON_H

#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include "runtimes/python/lw_abi_python.h"
#include "lib/frame.h"

struct proc;

/* python__detect: Python, but a version (or build) with no layout here */
#define PYTHON_UNSUPPORTED 1

/*
 * Is pid a CPython process, and which one? Returns 0 when supported, with
 * out ready for the "py_procs" map; PYTHON_UNSUPPORTED for 2.7, 3.7, a
 * debug or free-threaded build, a 3.13+ whose debug offsets are unusable…,
 * with out flagged LW_PY_F_UNSUPPORTED (put it in the map too: its stacks
 * become a marker frame that says why); -1 when pid runs no Python or is
 * gone. version gets "3.11.2" (or "2.7" when only the file name tells,
 * "3.14.8 (free-threaded)" with the reason) whenever the result is not -1.
 */
int python__detect(struct proc *p, struct lw_py_proc *out, char *version, size_t len);

/* The measured table's layout of version (major << 8 | minor) into out; -1: none. */
int python__table(unsigned int version, struct lw_py_proc *out);

struct python_syms;

/* Names code objects, with a bounded cache per (pid, code address). */
struct python_syms *python_syms__new(void);
void python_syms__free(struct python_syms *ps);
/* Drop what is cached for pid: call when it exits (its addresses may be reused). */
void python__forget_pid(struct python_syms *ps, int pid);

/*
 * A stack from "py_stacks" as frames, innermost first: kind FRAME_PYTHON,
 * func = qualified name (plain name before 3.11), file, line, addr = the
 * code object. offset is PYTHON_FRAME_ENTRY on the outermost frame of each
 * C-level eval call, for python__splice. A frame that cannot be read
 * becomes "[python: unreadable]", an unsupported version one
 * "[python: unsupported 2.7]" frame (": why" when known). 3.14+: the asyncio
 * Task that ran the stack follows its outermost frame, "[asyncio task: NAME,
 * coroutine CORO]" (", coroutine" left out when it cannot be read).
 * Returns the number of frames (<= max).
 */
#define PYTHON_FRAME_ENTRY 1
int python__symbolize(struct python_syms *ps, struct proc *p, const struct lw_py_stack *st,
		      struct frame *out, int max);

/*
 * One stack, leaf first: the kernel frames, the native frames above the
 * interpreter (libc, C extensions), the Python frames in place of the
 * interpreter's own (_PyEval_EvalFrameDefault, vectorcall glue…), and the
 * native frames below it (main). When the native stack holds no eval frame
 * (no frame pointers: a few good frames, then garbage) the Python frames
 * follow the leading frames that are surely right and the rest is dropped.
 * Marker frames alone (unsupported version, unreadable memory) replace
 * nothing: they go below the whole native stack.
 * Returns the number of frames written to out (<= max).
 */
int python__splice(const struct frame *native, int nnative, const struct frame *py, int npy,
		   struct frame *out, int max);

#endif
