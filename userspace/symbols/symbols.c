// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "proc/procs.h"
#include "symbols/native.h"
#include "runtimes/runtimes.h"
#include "symbols/symbols.h"
#include "symbols/unwind.h"

/* return addresses the leaf repair may insert */
#define SYMBOLS_MAX_INSERT 4
#define SYMBOLS_MAX_USER 256

struct symbols {
	struct procs *procs;
	struct symbolizer *native;
	struct runtimes *rts;
};

struct symbols *symbols__new(struct procs *procs, struct runtimes *rts)
{
	struct symbols *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->procs = procs;
	s->rts = rts;
	s->native = symbolizer__new(procs);
	if (!s->native) {
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
	runtimes__forget(s->rts, pid);
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
	for (int id = 0; id < LW_RT_N; id++) {
		if (raw->rt[id])
			n = runtimes__add_frames(s->rts, id, procs__get(s->procs, pid), raw->rt[id],
						 &frames, n);
	}
	n = stack__collapse_unnamed(frames, n);
	/* symbol, module, Python, JavaScript and file names are the target's own bytes */
	for (int i = 0; i < n; i++)
		frame__sanitize(&frames[i]);
	*out = frames;
	return n;
}
