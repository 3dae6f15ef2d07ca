/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The registered runtimes (runtimes.c's table, by enum lw_runtime) and
 * their per-collector state, made once and shared by the tracker (detect)
 * and symbols/ (symbolize, splice, forget).
 */
#ifndef LOOPWATCH_RUNTIMES_RUNTIMES_H
#define LOOPWATCH_RUNTIMES_RUNTIMES_H
#include "runtimes/runtime.h"

struct runtimes;

/* runtime id: a registered runtime, never NULL */
const struct runtime *runtimes__get(enum lw_runtime id);
/* the largest layout_size of any runtime */
size_t runtimes__max_layout(void);

/* NULL when out of memory */
struct runtimes *runtimes__new(void);
void runtimes__free(struct runtimes *rs);

enum runtime_found runtimes__detect(struct runtimes *rs, enum lw_runtime id, struct proc *p,
				    void *layout, char *desc, size_t len);
/*
 * The frames of a stack the kernel walked for runtime id, spliced into
 * *frames (n of them, malloc'ed; replaced by a new array): returns the count.
 * One caller at a time (the collector's main loop): rs's scratch holds them.
 */
int runtimes__add_frames(struct runtimes *rs, enum lw_runtime id, struct proc *p,
			 const void *stack, struct frame **frames, int n);
/* pid is gone, or names another process now: nothing kept of it may stay */
void runtimes__forget(struct runtimes *rs, int pid);
/* a frame of any runtime's own code */
bool runtimes__frame_is_own(const struct frame *f);

#endif
