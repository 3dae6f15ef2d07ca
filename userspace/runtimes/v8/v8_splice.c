// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * One stack out of two: the native frames say where the thread is in C and
 * C++, the JS frames what V8 was running. Both walks follow the same frame
 * pointers through V8's own code, so a JS frame's pc is one of the native
 * stack's addresses: the JS frames go there, and the V8 code frames around
 * them (JIT code, Builtins_InterpreterEntryTrampoline and the other
 * builtins) go away. The JS walk also crosses C++ that keeps no frame
 * pointer (it starts from V8's exit frame record), where the native walk
 * gets lost: JS frames it never reached follow the frames surely right.
 */
#include <stdbool.h>
#include <string.h>
#include "runtimes/v8/v8.h"

/* V8's generated code, as the native symbolizer names it */
static bool frame__is_v8_code(const struct frame *f)
{
	return f->kind == FRAME_JIT ||
	       (f->kind == FRAME_NATIVE && !strncmp(f->func, "Builtins_", 9));
}

static bool frame__is_marker(const struct frame *f)
{
	return !strncmp(f->func, "[js:", 4);
}

struct v8_splice {
	const struct frame *js;
	int njs;
	int next_js;		/* first JS frame not yet placed */
	struct frames_out o;
};

/*
 * The JS frame (from next_js on) run at this native address: its pc is the
 * leaf's ip, or a return address one past the call the native frame names.
 */
static int splice__match(const struct v8_splice *s, const struct frame *f)
{
	for (int j = s->next_js; j < s->njs; j++) {
		if (s->js[j].addr && (s->js[j].addr == f->addr || s->js[j].addr == f->addr + 1))
			return j;
	}
	return -1;
}

/* JS frames up to j and the rest of its physical frame (inlined frames share a pc) */
static void splice__put_through(struct v8_splice *s, int j)
{
	uint64_t pc = s->js[j].addr;

	while (s->next_js < s->njs && (s->next_js <= j || s->js[s->next_js].addr == pc))
		frames_out__put(&s->o, &s->js[s->next_js++]);
}

/* The JS frames not placed yet, at out position at (the frames after it move down). */
static void splice__insert_rest(struct v8_splice *s, int at)
{
	int rest = s->njs - s->next_js, tail = s->o.n - at;

	if (rest <= 0)
		return;
	if (at + rest > s->o.max)
		rest = s->o.max - at;
	if (at + rest + tail > s->o.max)
		tail = s->o.max - at - rest;
	memmove(&s->o.v[at + rest], &s->o.v[at], (size_t)tail * sizeof(*s->o.v));
	memcpy(&s->o.v[at], &s->js[s->next_js], (size_t)rest * sizeof(*s->o.v));
	s->o.n = at + rest + tail;
	s->next_js = s->njs;
}

int v8__splice(const struct frame *native, int nnative, const struct frame *js, int njs,
	       struct frame *out, int max)
{
	struct v8_splice s = { .js = js, .njs = njs > 0 ? njs : 0, .o = { .v = out, .max = max } };
	int i = 0, first_v8 = -1, after_js = -1, cut = -1;
	bool only_markers = true;

	if (max <= 0)
		return 0;
	if (nnative < 0)
		nnative = 0;
	for (; i < nnative && native[i].kind == FRAME_KERNEL; i++)
		frames_out__put(&s.o, &native[i]);
	for (int j = 0; j < s.njs; j++)
		only_markers &= frame__is_marker(&js[j]);
	if (only_markers) {
		for (; i < nnative; i++)
			frames_out__put(&s.o, &native[i]);
		while (s.next_js < s.njs)
			frames_out__put(&s.o, &js[s.next_js++]);
		return s.o.n;
	}
	for (; i < nnative; i++) {
		const struct frame *f = &native[i];
		int j = splice__match(&s, f);

		if (j >= 0) {
			splice__put_through(&s, j);
			after_js = s.o.n;
			continue;
		}
		if (frame__is_v8_code(f)) {
			if (first_v8 < 0)
				first_v8 = s.o.n;
			continue;
		}
		/* before any JS, an unnamed frame ends what is surely right */
		if (after_js < 0 && first_v8 < 0 && cut < 0 && !f->func[0])
			cut = s.o.n;
		frames_out__put(&s.o, f);
	}
	if (after_js >= 0)
		splice__insert_rest(&s, after_js);
	else if (first_v8 >= 0)
		splice__insert_rest(&s, first_v8);
	else {
		/* the native walk never reached V8: what follows its first unknown frame is junk */
		if (cut >= 0)
			s.o.n = cut;
		splice__insert_rest(&s, s.o.n);
	}
	return s.o.n;
}
