/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Stack in, frames out: the one entry point to naming what the kernel
 * captured. Native frames (ELF symbols, kallsyms), the leaf repair for
 * libraries without frame pointers, and the interpreter frames the BPF
 * walkers saw (Python, V8's JavaScript) spliced in where the interpreter
 * ran them.
 */
#ifndef LOOPWATCH_SYMBOLS_SYMBOLS_H
#define LOOPWATCH_SYMBOLS_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>
#include "lib/lwtypes.h"
#include "lw_abi_unwind.h"
#include "lib/frame.h"

struct proc;
struct procs;
struct runtimes;
struct symbols;

/* What the kernel captured for one stack; any part may be empty. */
struct raw_stack {
	const uint64_t *kernel;		/* kernel ips, leaf first */
	int nkernel;
	const uint64_t *user;		/* user ips, leaf first: return addresses but the leaf */
	int nuser;
	uint64_t user_fp;		/* bit i: user[i] found by frame pointer, not CFI */
	int user_stop;			/* why the walk ended (enum lw_uw_stop) */
	const uint64_t *words;		/* the top of the user stack, or NULL */
	int nwords;
	const void *rt[LW_RT_N];	/* each runtime's stack walked with it, or NULL */
};

/* NULL when out of memory or libelf is unusable */
struct symbols *symbols__new(struct procs *procs, struct runtimes *rts);
void symbols__free(struct symbols *s);
/*
 * One stack, leaf first: kernel frames, then user frames with the Python
 * or JS frames in place of the interpreter's. *out is malloc'ed (NULL when no
 * frame); returns how many frames it holds.
 */
int symbols__stack(struct symbols *s, int pid, const struct raw_stack *raw, struct frame **out);
/* Read pid's mappings now, while it lives: an event after its exit still names its frames. */
void symbols__warm(struct symbols *s, int pid);
/* pid now belongs to another process: what was cached for the old one must go. */
void symbols__forget(struct symbols *s, int pid);

#endif
