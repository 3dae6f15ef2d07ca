// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdlib.h>
#include "runtimes/runtimes.h"

extern const struct runtime runtime_python;
extern const struct runtime runtime_v8;

/* A runtime is one line here and one in bpf/runtimes/runtimes.bpf.h. */
static const struct runtime *const table[LW_RT_N] = {
	[LW_RT_PYTHON] = &runtime_python,
	[LW_RT_V8] = &runtime_v8,
};

struct runtimes {
	void *state[LW_RT_N];
	/* a stack's runtime frames while they are spliced: made once, not per stack */
	struct frame *scratch;
	int nscratch;
};

const struct runtime *runtimes__get(enum lw_runtime id)
{
	return table[id];
}

size_t runtimes__max_layout(void)
{
	size_t max = 0;

	for (int id = 0; id < LW_RT_N; id++)
		max = table[id]->layout_size > max ? table[id]->layout_size : max;
	return max;
}

struct runtimes *runtimes__new(void)
{
	struct runtimes *rs = calloc(1, sizeof(*rs));

	if (!rs)
		return NULL;
	for (int id = 0; id < LW_RT_N; id++) {
		rs->state[id] = table[id]->state_new();
		if (!rs->state[id]) {
			runtimes__free(rs);
			return NULL;
		}
		if (table[id]->max_frames > rs->nscratch)
			rs->nscratch = table[id]->max_frames;
	}
	rs->scratch = calloc((size_t)rs->nscratch, sizeof(*rs->scratch));
	if (!rs->scratch) {
		runtimes__free(rs);
		return NULL;
	}
	return rs;
}

void runtimes__free(struct runtimes *rs)
{
	if (!rs)
		return;
	for (int id = 0; id < LW_RT_N; id++) {
		if (rs->state[id])
			table[id]->state_free(rs->state[id]);
	}
	free(rs->scratch);
	free(rs);
}

enum runtime_found runtimes__detect(struct runtimes *rs, enum lw_runtime id, struct proc *p,
				    void *layout, char *desc, size_t len)
{
	return table[id]->detect(rs->state[id], p, layout, desc, len);
}

int runtimes__add_frames(struct runtimes *rs, enum lw_runtime id, struct proc *p,
			 const void *stack, struct frame **frames, int n)
{
	const struct runtime *rt = table[id];
	struct frame *merged = NULL;
	int nadd;

	nadd = rt->symbolize(rs->state[id], p, stack, rs->scratch, rt->max_frames);
	if (nadd > 0)
		merged = calloc((size_t)(n + nadd), sizeof(*merged));
	if (merged) {
		n = rt->splice(*frames, n, rs->scratch, nadd, merged, n + nadd);
		free(*frames);
		*frames = merged;
	}
	return n;
}

void runtimes__forget(struct runtimes *rs, int pid)
{
	for (int id = 0; id < LW_RT_N; id++)
		table[id]->forget(rs->state[id], pid);
}

bool runtimes__frame_is_own(const struct frame *f)
{
	for (int id = 0; id < LW_RT_N; id++) {
		if (table[id]->frame_is_own(f))
			return true;
	}
	return false;
}
