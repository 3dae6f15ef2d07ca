// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* V8 (node) as a runtime (runtimes/runtime.h): v8.c behind the interface. */
#include <string.h>
#include "runtimes/runtime.h"
#include "runtimes/v8/v8.h"

static void *v8__state_new(void)
{
	return v8_syms__new();
}

static void v8__state_free(void *state)
{
	v8_syms__free(state);
}

static enum runtime_found v8__found(void *state, struct proc *p, void *layout, char *desc,
				    size_t len)
{
	int r = v8__detect(state, p, layout, desc, len);

	if (r < 0)
		return RUNTIME_NONE;
	return r == V8_UNSUPPORTED ? RUNTIME_MARKED : RUNTIME_WALKED;
}

static int v8__frames(void *state, struct proc *p, const void *stack, struct frame *out, int max)
{
	return v8__symbolize(state, p, stack, out, max);
}

static void v8__forget(void *state, int pid)
{
	v8__forget_pid(state, pid);
}

/*
 * node's own JavaScript (node:internal/..., node:fs) and V8's builtins (no
 * script); V8's own C++ and builtin code: dozens of internal functions (a
 * property store, a call trampoline) that would each take a row of the
 * functions table. Their time goes to the nearest frame that is not V8's (a
 * JS function, or node's binding that called in).
 */
static bool v8__frame_is_own(const struct frame *f)
{
	if (f->kind == FRAME_JS)
		return !f->file[0] || !strncmp(f->file, "node:", 5);
	return f->kind != FRAME_PYTHON &&
	       (!strncmp(f->func, "v8::", 4) || !strncmp(f->func, "Builtins_", 9));
}

const struct runtime runtime_v8 = {
	.name = "v8",
	.frames = "JavaScript",
	.procs_map = "v8_procs",
	.stacks_map = "v8_stacks",
	.layout_size = sizeof(struct lw_v8_proc),
	.stack_size = sizeof(struct lw_v8_stack),
	/* optimised code gives a frame per inlined function, and a marker may follow */
	.max_frames = LW_V8_MAX_DEPTH * 2 + 1,
	/* V8's code range is re-read at each rescan: the kernel is told of a change */
	.redetect = true,
	.state_new = v8__state_new,
	.state_free = v8__state_free,
	.detect = v8__found,
	.symbolize = v8__frames,
	.splice = v8__splice,
	.forget = v8__forget,
	.frame_is_own = v8__frame_is_own,
};
