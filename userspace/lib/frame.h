/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* One named frame of a stack, whatever it came from: what symbols/ gives out. */
#ifndef LOOPWATCH_LIB_FRAME_H
#define LOOPWATCH_LIB_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum frame_kind { FRAME_NATIVE, FRAME_KERNEL, FRAME_PYTHON, FRAME_JIT, FRAME_JS };

/* How a user frame was found from the one below it (the leaf: from the registers). */
enum frame_unwind {
	FRAME_UNWIND_CFI,	/* the file's call-frame information, or not a user frame */
	FRAME_UNWIND_FP,	/* a frame pointer: no CFI there (JIT code, no table) */
	FRAME_UNWIND_SCAN,	/* a return address found among the stack's top words */
};

struct frame {
	enum frame_kind kind;
	enum frame_unwind unwind;
	uint64_t addr;
	char func[128];		/* display name (C++ shortened), "" if unknown ([unknown]) */
	char func_raw[256];	/* the symbol as the file has it, when func shows it otherwise */
	uint64_t offset;	/* addr - symbol start */
	char module[128];	/* basename of the mapped file, "[kernel]" for kernel */
	char file[160];		/* source file when known (python, js, JIT maps), else "" */
	int line;		/* source line when known, else 0 */
	int column;		/* js, JIT maps: source column when known, else 0 */
	bool line_inexact;	/* js: not the pc's line: the function's first or last call's */
	const char *tier;	/* js: the V8 tier that ran it (a static string), else NULL */
};

/*
 * format "func+0xoff (module)" or "[unknown] (module)" into buf.
 * Python and JS frames with a known file print "func (file:line)" instead,
 * and so do JIT frames named by a perf map ("func (file:line:column)" when
 * the map gives a column).
 * The module part is omitted when the module is unknown. Returns what
 * snprintf() would: the untruncated length, or -1 on bad arguments.
 */
int frame__format(const struct frame *f, char *buf, size_t len);
/* Interpreted code (Python, JavaScript): named by file and line, not module and offset. */
static inline bool frame__is_script(const struct frame *f)
{
	return f->kind == FRAME_PYTHON || f->kind == FRAME_JS;
}

/* A frame that says why there is no name ("[python: unreadable]"): text as func. */
void frame__marker(struct frame *f, enum frame_kind kind, const char *text);

/* A bounded array being filled: what does not fit is dropped. */
struct frames_out {
	struct frame *v;
	int n, max;
};

void frames_out__put(struct frames_out *o, const struct frame *f);

/*
 * The names come from the target's files and memory: terminated and made
 * printable (lib/text.h) before any output sees them.
 */
void frame__sanitize(struct frame *f);

#endif
