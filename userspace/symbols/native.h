/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Native frames: raw stack addresses to function and module names. User
 * addresses are resolved through the process's maps (proc/) and the ELF
 * symbol tables of the mapped files, kernel addresses through
 * /proc/kallsyms. Everything read from the target is untrusted: bad input
 * yields frames with an empty func, never an error or a crash.
 *
 * A symbolizer is not thread-safe; use one per thread or lock around it.
 */
#ifndef LOOPWATCH_SYMBOLS_NATIVE_H
#define LOOPWATCH_SYMBOLS_NATIVE_H

#include <stdbool.h>
#include <stdint.h>
#include "lib/frame.h"

struct procs;
struct symbolizer;

/* Returns NULL only when out of memory or libelf is unusable. */
struct symbolizer *symbolizer__new(struct procs *procs);
void symbolizer__free(struct symbolizer *s);

/*
 * Resolve n addresses of one stack. kernel=true for kernel ips. Returns
 * number of frames written (<= max_out). Never fails hard: unknown
 * addresses give frames with func "" and module set if the mapping is known.
 *
 * Addresses are symbolized as given: callers that want the call site
 * rather than the return address should pass ip - 1 for non-leaf frames.
 */
int symbolizer__symbolize(struct symbolizer *s, int pid, const uint64_t *ips, int n,
			  bool kernel, struct frame *out, int max_out);

/* drop per-process caches (call when a process exits or pid may be reused) */
void symbolizer__forget_pid(struct symbolizer *s, int pid);

#endif
