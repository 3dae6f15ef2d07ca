// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * One stack out of two: the native frames say where the thread is in C,
 * the Python frames what the interpreter was running. Each native
 * _PyEval_EvalFrameDefault ran one group of Python frames (the frames up
 * to one marked PYTHON_FRAME_ENTRY), so the groups go where the eval
 * frames were and the interpreter's call glue around them goes away.
 */
#include <stdbool.h>
#include <string.h>
#include "runtimes/python/python.h"

/* the call machinery between Python frames: says nothing a Python frame doesn't */
static const char *const glue[] = {
	"_PyEval_", "PyEval_", "_PyObject_Vectorcall", "PyObject_Vectorcall", "_PyObject_Call",
	"PyObject_Call", "_PyObject_FastCall", "PyObject_FastCall", "_PyObject_MakeTpCall",
	"_PyFunction_", "PyVectorcall_", "_PyVectorcall_", "method_vectorcall", "cfunction_",
	"_PyCFunction", "vectorcall_", "slot_tp_call", "function_code_fastcall", "call_function",
	"do_call_core", "object_vacall", "_PyMethodDef_", "_PyMethodDescr_", "wrapper_call",
	"wrapperdescr_call", "gen_send_ex", "_PyGen_", "gen_iternext", "PyIter_Send",
	"_PyObject_VectorcallTstate", "partial_vectorcall", "partial_call",
};

/* The interpreter's own code: the python executable or libpython. */
static bool frame__in_interpreter(const struct frame *f)
{
	return f->kind == FRAME_NATIVE &&
	       (!strncmp(f->module, "libpython", 9) || !strncmp(f->module, "python", 6));
}

static bool frame__is_eval(const struct frame *f)
{
	return frame__in_interpreter(f) && !strcmp(f->func, "_PyEval_EvalFrameDefault");
}

static bool frame__is_glue(const struct frame *f)
{
	if (!f->func[0])
		return true;	/* stripped interpreter: nothing to show */
	for (size_t i = 0; i < sizeof(glue) / sizeof(glue[0]); i++) {
		if (!strncmp(f->func, glue[i], strlen(glue[i])))
			return true;
	}
	return false;
}

struct splice {
	const struct frame *py;
	int npy;
	int next_py;		/* first Python frame not yet placed */
	struct frames_out o;
};

static void splice__put(struct splice *s, const struct frame *f)
{
	frames_out__put(&s->o, f);
}

/* The next group of Python frames: up to and including the next entry frame. */
static void splice__put_group(struct splice *s)
{
	while (s->next_py < s->npy) {
		const struct frame *f = &s->py[s->next_py++];

		splice__put(s, f);
		if (f->offset & PYTHON_FRAME_ENTRY)
			break;
	}
}

/*
 * Native stacks that reach an eval frame: each eval frame takes one group,
 * the groups the native walk never reached (it stopped early) follow the
 * last one, and frames below the interpreter (main) stay at the root.
 */
static void splice__interleave(struct splice *s, const struct frame *native, int from, int nnative)
{
	int after_last_group = -1, last_eval = -1;
	bool seen_interp = false;

	for (int i = from; i < nnative; i++) {
		if (frame__is_eval(&native[i]))
			last_eval = i;
	}
	for (int i = from; i < nnative; i++) {
		const struct frame *f = &native[i];

		if (frame__is_eval(f)) {
			splice__put_group(s);
			if (i == last_eval)
				after_last_group = s->o.n;
			seen_interp = true;
			continue;
		}
		if (frame__in_interpreter(f)) {
			seen_interp = true;
			if (!frame__is_glue(f))
				splice__put(s, f);
			continue;
		}
		/* past the interpreter an unnamed frame is more likely garbage than JIT code */
		if (f->func[0] || !seen_interp)
			splice__put(s, f);
	}
	if (s->next_py >= s->npy || after_last_group < 0)
		return;
	/* the outer Python frames go between the last group and the native root */
	{
		int rest = s->npy - s->next_py, tail = s->o.n - after_last_group;

		if (after_last_group + rest > s->o.max)
			rest = s->o.max - after_last_group;
		if (after_last_group + rest + tail > s->o.max)
			tail = s->o.max - after_last_group - rest;
		memmove(&s->o.v[after_last_group + rest], &s->o.v[after_last_group],
			(size_t)tail * sizeof(*s->o.v));
		memcpy(&s->o.v[after_last_group], &s->py[s->next_py],
		       (size_t)rest * sizeof(*s->o.v));
		s->o.n = after_last_group + rest + tail;
		s->next_py = s->npy;
	}
}

/* Only "[python: ...]" markers (unsupported version, unreadable memory): nothing to place. */
static bool frames__only_markers(const struct frame *py, int npy)
{
	for (int i = 0; i < npy; i++) {
		if (py[i].file[0])
			return false;
	}
	return true;
}

int python__splice(const struct frame *native, int nnative, const struct frame *py, int npy,
		   struct frame *out, int max)
{
	struct splice s = { .py = py, .npy = npy > 0 ? npy : 0, .o = { .v = out, .max = max } };
	bool has_eval = false;
	int i = 0;

	if (max <= 0)
		return 0;
	if (nnative < 0)
		nnative = 0;
	/* the kernel's part, then the user part from its leaf */
	for (; i < nnative && native[i].kind == FRAME_KERNEL; i++)
		splice__put(&s, &native[i]);
	/* no Python frames to put in: the native stack stays whole, markers at its root */
	if (!s.npy || frames__only_markers(py, s.npy)) {
		for (; i < nnative; i++)
			splice__put(&s, &native[i]);
		while (s.next_py < s.npy)
			splice__put(&s, &s.py[s.next_py++]);
		return s.o.n;
	}
	for (int j = i; j < nnative; j++)
		has_eval |= frame__is_eval(&native[j]);
	if (has_eval) {
		splice__interleave(&s, native, i, nnative);
		return s.o.n;
	}
	/*
	 * No eval frame: the walk lost its way (no frame pointers) before it
	 * reached the interpreter. Keep the frames surely right, the named
	 * ones before the first in the interpreter, then the Python frames.
	 * The leaf comes from the registers, so it is right even inside the
	 * interpreter (time.time() in _PyTime_AsSecondsDouble): keep it unless
	 * it is call glue.
	 */
	for (int leaf = i; i < nnative && native[i].func[0]; i++) {
		if (frame__in_interpreter(&native[i])) {
			if (i == leaf && !frame__is_glue(&native[i]))
				splice__put(&s, &native[i]);
			break;
		}
		splice__put(&s, &native[i]);
	}
	while (s.next_py < s.npy)
		splice__put(&s, &s.py[s.next_py++]);
	return s.o.n;
}
