// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "proc/procs.h"
#include "symbols/native.h"
#include "symbols/python.h"
#include "symbols/symbols.h"
#include "symbols/unwind.h"
#include "symbols/v8.h"

/* return addresses the leaf repair may insert */
#define SYMBOLS_MAX_INSERT 4
#define SYMBOLS_MAX_USER 256

struct symbols {
	struct procs *procs;
	struct symbolizer *native;
	struct python_syms *python;
	struct v8_syms *v8;
};

struct symbols *symbols__new(struct procs *procs)
{
	struct symbols *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->procs = procs;
	s->native = symbolizer__new(procs);
	s->python = python_syms__new();
	s->v8 = v8_syms__new();
	if (!s->native || !s->python || !s->v8) {
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
	v8_syms__free(s->v8);
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
	v8__forget_pid(s->v8, pid);
}

int symbols__detect_v8(struct symbols *s, struct proc *p, struct lw_v8_proc *out, char *desc,
		       size_t len)
{
	return v8__detect(s->v8, p, out, desc, len);
}

typedef int (*splice_fn)(const struct frame *native, int nnative, const struct frame *add,
			 int nadd, struct frame *out, int max);

/* One stack of the native frames and an interpreter's, put together by splice. */
static int stack__splice(struct frame **frames, int n, const struct frame *add, int nadd,
			 splice_fn splice)
{
	struct frame *merged;
	int max = n + nadd;

	if (!nadd)
		return n;
	merged = calloc((size_t)max, sizeof(*merged));
	if (!merged)
		return n;
	n = splice(*frames, n, add, nadd, merged, max);
	free(*frames);
	*frames = merged;
	return n;
}

/* The Python frames the BPF side walked with this stack, spliced into it. */
static int stack__add_python(struct symbols *s, int pid, const struct lw_py_stack *st,
			     struct frame **frames, int n)
{
	struct frame py[LW_PY_MAX_DEPTH + 1];
	int npy = python__symbolize(s->python, procs__get(s->procs, pid), st, py,
				    LW_PY_MAX_DEPTH + 1);

	return stack__splice(frames, n, py, npy, python__splice);
}

/* The JS frames the BPF side walked with this stack, spliced into it. */
static int stack__add_v8(struct symbols *s, int pid, const struct lw_v8_stack *st,
			 struct frame **frames, int n)
{
	struct frame js[LW_V8_MAX_DEPTH * 2 + 1];
	int njs = v8__symbolize(s->v8, procs__get(s->procs, pid), st, js,
				(int)(sizeof(js) / sizeof(js[0])));

	return stack__splice(frames, n, js, njs, v8__splice);
}

/* A walk that ended before the outermost frame says why, as a frame of its own. */
static const char *unwind__stop_marker(int stop)
{
	switch (stop) {
	case LW_UW_STOP_DEPTH:
		return "[unwind: 64-frame limit]";
	case LW_UW_STOP_READ:
		return "[unwind: stack unreadable]";
	case LW_UW_STOP_UNSUP:
		return "[unwind: CFI rule not supported]";
	case LW_UW_STOP_BAD_FRAME:
		return "[unwind: no valid frame]";
	case LW_UW_STOP_FP:
		return "[unwind: no CFI, no frame pointer]";
	default:
		return NULL;
	}
}

/*
 * The leaf repair is for stacks walked with frame pointers alone (no tables
 * yet, or --unwind-mb 0) from a leaf in code without them. Where CFI found
 * any frame, the words would only add guesses to a walk that needs none.
 */
static int stack__repair_leaf(struct symbols *s, int pid, const struct raw_stack *raw,
			      uint64_t *uips, int nu, enum frame_unwind *how)
{
	uint64_t past_leaf = nu > 1 && nu <= 64 ? (~0ull >> (64 - nu)) & ~1ull : 0;
	int n = nu;

	if (!raw->words || nu < 1 || nu > 64 || (raw->user_fp & past_leaf) != past_leaf)
		return nu;
	n = unwind__fixup_leaf(procs__get(s->procs, pid), uips, nu,
			       SYMBOLS_MAX_USER + SYMBOLS_MAX_INSERT, raw->words, raw->nwords);
	if (n > nu) {
		memmove(&how[1 + n - nu], &how[1], (size_t)(nu - 1) * sizeof(*how));
		for (int i = 1; i <= n - nu; i++)
			how[i] = FRAME_UNWIND_SCAN;
	}
	return n;
}

static bool frame__unnamed_native(const struct frame *f)
{
	return f->kind == FRAME_NATIVE && !f->func[0] && f->module[0];
}

/*
 * A run of unnamed frames of one module (a stripped library's internal
 * functions) says how much of the stack is unnamed in one marker frame,
 * "[N unknown frames]" with the module, instead of N lines of "[unknown]".
 * After the splices: they place Python and JS frames by the native ones.
 */
static int stack__collapse_unnamed(struct frame *frames, int n)
{
	int out = 0;

	for (int i = 0; i < n;) {
		int run = 1;

		while (i + run < n && frame__unnamed_native(&frames[i]) &&
		       frame__unnamed_native(&frames[i + run]) &&
		       !strcmp(frames[i].module, frames[i + run].module))
			run++;
		frames[out] = frames[i];
		if (run > 1)
			snprintf(frames[out].func, sizeof(frames[out].func), "[%d unknown frames]",
				 run);
		out++;
		i += run;
	}
	return out;
}

int symbols__stack(struct symbols *s, int pid, const struct raw_stack *raw, struct frame **out)
{
	uint64_t uips[SYMBOLS_MAX_USER + SYMBOLS_MAX_INSERT];
	enum frame_unwind how[SYMBOLS_MAX_USER + SYMBOLS_MAX_INSERT];
	int nu = raw->nuser < SYMBOLS_MAX_USER ? raw->nuser : SYMBOLS_MAX_USER;
	const char *marker = NULL;
	int nk = raw->nkernel, n = 0;
	struct frame *frames;

	*out = NULL;
	if (nu > 0)
		memcpy(uips, raw->user, (size_t)nu * sizeof(*uips));
	else
		nu = 0;
	if (nk < 0)
		nk = 0;
	for (int i = 0; i < nu; i++)
		how[i] = i < 64 && (raw->user_fp >> i & 1) ? FRAME_UNWIND_FP : FRAME_UNWIND_CFI;
	nu = stack__repair_leaf(s, pid, raw, uips, nu, how);
	if (nu)
		marker = unwind__stop_marker(raw->user_stop);
	frames = calloc((size_t)(nk + nu + 1), sizeof(*frames));
	if (!frames)
		return 0;
	/* return addresses point past the call: look up the call itself */
	for (int i = 1; i < nu; i++)
		uips[i]--;
	if (nk)
		n += symbolizer__symbolize(s->native, pid, raw->kernel, nk, true, frames, nk);
	if (nu) {
		int got = symbolizer__symbolize(s->native, pid, uips, nu, false, frames + n, nu);

		for (int i = 0; i < got; i++)
			frames[n + i].unwind = how[i];
		n += got;
	}
	if (marker) {
		frames[n].kind = FRAME_NATIVE;
		snprintf(frames[n].func, sizeof(frames[n].func), "%s", marker);
		n++;
	}
	if (raw->python)
		n = stack__add_python(s, pid, raw->python, &frames, n);
	if (raw->v8)
		n = stack__add_v8(s, pid, raw->v8, &frames, n);
	n = stack__collapse_unnamed(frames, n);
	/* symbol, module, Python, JavaScript and file names are the target's own bytes */
	for (int i = 0; i < n; i++)
		frame__sanitize(&frames[i]);
	*out = frames;
	return n;
}
