// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Which frames name a culprit: the user's own code, never the runtime it
 * calls into. A stall in json.dumps is the fault of whoever called it with
 * a large object, and a sleep in libc of whoever called sleep.
 */
#include <stdio.h>
#include <string.h>
#include "model/report.h"

static bool module__is_runtime(const char *m)
{
	return !strncmp(m, "libc.so", 7) || !strncmp(m, "ld-linux", 8) ||
	       !strncmp(m, "libpthread", 10) || !strcmp(m, "[vdso]");
}

/* The interpreter's own library: json.dumps is rarely the frame to show. */
static bool file__is_stdlib(const char *file)
{
	return strstr(file, "/lib/python") && !strstr(file, "-packages/");
}

/* The frame to start from: the user's own code first, libc and the stdlib last. */
static int stack__culprit(const struct stack_report *s, bool python)
{
	int first = -1;

	for (int i = 0; i < s->nframes; i++) {
		const struct frame *f = &s->frames[i];

		if (python != (f->kind == FRAME_PYTHON) || f->kind == FRAME_KERNEL || !f->func[0] ||
		    f->func[0] == '[')
			continue;
		if (first < 0)
			first = i;
		if (python ? !file__is_stdlib(f->file) : !module__is_runtime(f->module))
			return i;
	}
	return first;
}

int stack_report__culprit(const struct stack_report *s)
{
	int first = stack__culprit(s, true);

	return first >= 0 ? first : stack__culprit(s, false);
}

/* The two frames that best name a culprit: Python code when there is any. */
void stack_report__top(const struct stack_report *s, char *buf, size_t len)
{
	int first = stack_report__culprit(s), shown = 0;
	bool python = first >= 0 && s->frames[first].kind == FRAME_PYTHON;
	size_t used = 0;

	buf[0] = '\0';
	if (first < 0) {
		snprintf(buf, len, "[unknown]");
		return;
	}
	for (int i = first; i < s->nframes && shown < 2 && used < len; i++) {
		const struct frame *f = &s->frames[i];
		const char *base = strrchr(f->file, '/');

		if (python != (f->kind == FRAME_PYTHON) || f->kind == FRAME_KERNEL || !f->func[0])
			continue;
		if (python)
			used += (size_t)snprintf(buf + used, len - used, "%s%s (%s:%d)",
						 shown ? " < " : "", f->func,
						 base ? base + 1 : f->file, f->line);
		else
			used += (size_t)snprintf(buf + used, len - used, "%s%s",
						 shown ? " < " : "", f->func);
		shown++;
	}
}

const struct stack_report *stall_report__main_stack(const struct stall_report *r)
{
	const struct stack_report *best = NULL;

	for (int i = 0; i < r->nstacks; i++) {
		const struct stack_report *s = &r->stacks[i];
		bool by_ns = r->cause != CAUSE_CPU;

		if (s->blocked != (r->cause == CAUSE_BLOCKED) || s->runq != (r->cause == CAUSE_RUNQ))
			continue;
		if (!best || (by_ns ? s->ns > best->ns : s->samples > best->samples))
			best = s;
	}
	return best ? best : r->nstacks ? &r->stacks[0] : NULL;
}
