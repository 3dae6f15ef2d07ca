// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* CPython as a runtime (runtimes/runtime.h): python.c behind the interface. */
#include <stdio.h>
#include <string.h>
#include "runtimes/python/python.h"
#include "runtimes/runtime.h"

static void *python__state_new(void)
{
	return python_syms__new();
}

static void python__state_free(void *state)
{
	python_syms__free(state);
}

static enum runtime_found python__found(void *state, struct proc *p, void *layout, char *desc,
					size_t len)
{
	char version[96];
	int r = python__detect(p, layout, version, sizeof(version));

	(void)state;
	if (r < 0)
		return RUNTIME_NONE;
	snprintf(desc, len, "CPython %s", version);
	return r == PYTHON_UNSUPPORTED ? RUNTIME_MARKED : RUNTIME_WALKED;
}

static int python__frames(void *state, struct proc *p, const void *stack, struct frame *out,
			  int max)
{
	return python__symbolize(state, p, stack, out, max);
}

static void python__forget(void *state, int pid)
{
	python__forget_pid(state, pid);
}

/* The interpreter's own library: json.dumps is rarely the frame to show. */
static bool python__frame_is_own(const struct frame *f)
{
	return f->kind == FRAME_PYTHON && strstr(f->file, "/lib/python") &&
	       !strstr(f->file, "-packages/");
}

const struct runtime runtime_python = {
	.name = "python",
	.frames = "Python",
	.procs_map = "py_procs",
	.stacks_map = "py_stacks",
	.layout_size = sizeof(struct lw_py_proc),
	.stack_size = sizeof(struct lw_py_stack),
	/* a marker may follow the walked frames (an asyncio Task's name) */
	.max_frames = LW_PY_MAX_DEPTH + 1,
	.state_new = python__state_new,
	.state_free = python__state_free,
	.detect = python__found,
	.symbolize = python__frames,
	.splice = python__splice,
	.forget = python__forget,
	.frame_is_own = python__frame_is_own,
};
