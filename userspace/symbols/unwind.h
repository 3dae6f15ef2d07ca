/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Repairs frame-pointer stacks taken inside libraries built without frame
 * pointers (Debian's glibc): the walk starts at the leaf's ip, then follows
 * the caller's saved frame, so the function that called into libc is lost.
 * Its return address is still on the stack, among the words saved with it.
 */
#ifndef LOOPWATCH_SYMBOLS_UNWIND_H
#define LOOPWATCH_SYMBOLS_UNWIND_H

#include <stdint.h>

struct proc;

/*
 * Insert, after ips[0], the return addresses found in words (the top of the
 * user stack) before the frame-pointer walk resumes at ips[1]. A word counts
 * only if it points into an executable mapping of p right after a call
 * instruction. Returns the new depth (<= max).
 */
int unwind__fixup_leaf(struct proc *p, uint64_t *ips, int n, int max, const uint64_t *words,
		       int nwords);

#endif
