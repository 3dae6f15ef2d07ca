/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Naming the JS frames BPF recorded, from the process's heap: function
 * name, script, line and column, the tier that ran it. The heap moves
 * (scavenges copy young objects, mark-compact evacuates old pages), so a
 * frame is named only if the SharedFunctionInfo at its captured address is
 * still the one BPF saw (same map, same name_or_scope_info word); anything
 * else gives a marker, never another function's name.
 */
#ifndef LOOPWATCH_SYMBOLS_V8NAME_H
#define LOOPWATCH_SYMBOLS_V8NAME_H

#include <stdint.h>
#include <linux/types.h>
#include "runtimes/v8/lw_abi_v8.h"
#include "lib/frame.h"
#include "runtimes/v8/v8meta.h"

struct proc;
struct v8_namer;

/* One node process: its binary's layout and where V8 put its code. */
struct v8_target {
	const struct v8_meta *m;
	struct proc *p;
	uint64_t bias;			/* load address - link address of the binary */
	uint64_t blob_lo, blob_hi;	/* the embedded builtins as loaded with the binary */
	uint64_t remap_lo, remap_hi;	/* their copy in the code range (short builtin calls) */
	uint64_t remap_blob;		/* the blob's address in that copy */
	uint64_t code_lo, code_hi;	/* the code range */
};

struct v8_namer *v8_namer__new(void);
void v8_namer__free(struct v8_namer *n);
/*
 * One frame into out[0..max), innermost first: optimised code that inlined
 * other functions gives a frame per function. top_ret: the stack's top_ret
 * for its first frame, else 0. Returns how many (>= 1 when max >= 1).
 */
int v8_namer__frame(struct v8_namer *n, const struct v8_target *t, const struct lw_v8_frame *f,
		    uint64_t top_ret, struct frame *out, int max);

#endif
