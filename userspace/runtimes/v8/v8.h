/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * JavaScript frames of node (V8) processes: which processes run V8 and how
 * to walk them (v8__detect fills the struct lw_v8_proc the BPF walker
 * reads, from the binary's v8dbg_* metadata, v8meta.c), what the walked
 * stacks say (v8__symbolize names functions from the target's heap,
 * v8name.c), and one stack out of the native and the JS frames
 * (v8__splice). Supported: node 18-24 on x86_64 (no pointer compression).
 */
#ifndef LOOPWATCH_SYMBOLS_V8_H
#define LOOPWATCH_SYMBOLS_V8_H

#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include "runtimes/v8/lw_abi_v8.h"
#include "lib/frame.h"

struct proc;
struct v8_syms;

/* v8__detect: node, but its V8 metadata is missing or unusable */
#define V8_UNSUPPORTED 1

struct v8_syms *v8_syms__new(void);
void v8_syms__free(struct v8_syms *vs);
/* Drop what is kept for pid: call when it exits (its addresses may be reused). */
void v8__forget_pid(struct v8_syms *vs, int pid);

/*
 * Is p a node process (an executable named node*, or libnode mapped)? 0
 * when its frames can be walked, with out ready for "v8_procs";
 * V8_UNSUPPORTED when the metadata is missing or unusable, with out flagged
 * LW_V8_P_UNSUPPORTED (put it in the map too: its stacks get a marker); -1
 * when p runs no V8 or is gone. desc gets "V8 11.3.244" or why not.
 */
int v8__detect(struct v8_syms *vs, struct proc *p, struct lw_v8_proc *out, char *desc,
	       size_t len);

/*
 * A stack from "v8_stacks" as frames, innermost first: kind FRAME_JS, func
 * ("<anonymous>" for no name), file (the script), line and column, tier;
 * addr = the physical frame's pc, so that v8__splice can find it in the
 * native stack. Functions inlined by the optimiser are frames of their own
 * at the same pc. A frame that cannot be named is a "[js: ...]" marker,
 * never a guess. Returns the number of frames (<= max).
 */
int v8__symbolize(struct v8_syms *vs, struct proc *p, const struct lw_v8_stack *st,
		  struct frame *out, int max);

/*
 * One stack, leaf first: the kernel frames, the native frames above V8
 * (libc, node's C++, OpenSSL), the JS frames in place of the V8 code that
 * ran them (JIT code, Builtins_*), and the native frames below (libuv,
 * main). A JS frame goes where the native walk met its pc; JS frames the
 * native walk never reached (C++ without frame pointers) follow the frames
 * surely right. Markers alone replace nothing: they go below the whole
 * native stack. Returns the number of frames written to out (<= max).
 */
int v8__splice(const struct frame *native, int nnative, const struct frame *js, int njs,
	       struct frame *out, int max);

#endif
