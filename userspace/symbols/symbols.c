// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdlib.h>
#include <string.h>
#include "proc/procs.h"
#include "symbols/native.h"
#include "symbols/python.h"
#include "symbols/symbols.h"
#include "symbols/unwind.h"

/* return addresses the leaf repair may insert */
#define SYMBOLS_MAX_INSERT 4
#define SYMBOLS_MAX_USER 256

struct symbols {
	struct procs *procs;
	struct symbolizer *native;
	struct python_syms *python;
};

struct symbols *symbols__new(struct procs *procs)
{
	struct symbols *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->procs = procs;
	s->native = symbolizer__new(procs);
	s->python = python_syms__new();
	if (!s->native || !s->python) {
		symbols__free(s);
		return NULL;
	}
	return s;
}

void symbols__free(struct symbols *s)
{
	if (!s)
		return;
	symbolizer__free(s->native);
	python_syms__free(s->python);
	free(s);
}

void symbols__warm(struct symbols *s, int pid)
{
	uint64_t ip = 0;
	struct frame f;

	symbolizer__symbolize(s->native, pid, &ip, 1, false, &f, 1);
}

void symbols__forget(struct symbols *s, int pid)
{
	symbolizer__forget_pid(s->native, pid);
	python__forget_pid(s->python, pid);
}

/* The Python frames the BPF side walked with this stack, spliced into it. */
static int stack__add_python(struct symbols *s, int pid, const struct lw_py_stack *st,
			     struct frame **frames, int n)
{
	struct frame py[LW_PY_MAX_DEPTH + 1], *merged;
	int npy, max;

	npy = python__symbolize(s->python, procs__get(s->procs, pid), st, py,
				LW_PY_MAX_DEPTH + 1);
	if (!npy)
		return n;
	max = n + npy;
	merged = calloc((size_t)max, sizeof(*merged));
	if (!merged)
		return n;
	n = python__splice(*frames, n, py, npy, merged, max);
	free(*frames);
	*frames = merged;
	return n;
}

int symbols__stack(struct symbols *s, int pid, const struct raw_stack *raw, struct frame **out)
{
	uint64_t uips[SYMBOLS_MAX_USER + SYMBOLS_MAX_INSERT];
	int nu = raw->nuser < SYMBOLS_MAX_USER ? raw->nuser : SYMBOLS_MAX_USER;
	int nk = raw->nkernel, n = 0;
	struct frame *frames;

	*out = NULL;
	if (nu > 0)
		memcpy(uips, raw->user, (size_t)nu * sizeof(*uips));
	else
		nu = 0;
	if (nk < 0)
		nk = 0;
	if (raw->words && nu)
		nu = unwind__fixup_leaf(procs__get(s->procs, pid), uips, nu,
					SYMBOLS_MAX_USER + SYMBOLS_MAX_INSERT, raw->words,
					raw->nwords);
	frames = calloc((size_t)(nk + nu + 1), sizeof(*frames));
	if (!frames)
		return 0;
	/* return addresses point past the call: look up the call itself */
	for (int i = 1; i < nu; i++)
		uips[i]--;
	if (nk)
		n += symbolizer__symbolize(s->native, pid, raw->kernel, nk, true, frames, nk);
	if (nu)
		n += symbolizer__symbolize(s->native, pid, uips, nu, false, frames + n, nu);
	if (raw->python)
		n = stack__add_python(s, pid, raw->python, &frames, n);
	*out = frames;
	return n;
}
