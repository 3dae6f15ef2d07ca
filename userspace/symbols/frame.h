/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* One named frame of a stack, whatever it came from: what symbols/ gives out. */
#ifndef LOOPWATCH_SYMBOLS_FRAME_H
#define LOOPWATCH_SYMBOLS_FRAME_H

#include <stddef.h>
#include <stdint.h>

enum frame_kind { FRAME_NATIVE, FRAME_KERNEL, FRAME_PYTHON, FRAME_JIT };

struct frame {
	enum frame_kind kind;
	uint64_t addr;
	char func[128];		/* symbol name, "" if unknown (then print [unknown]) */
	uint64_t offset;	/* addr - symbol start */
	char module[128];	/* basename of the mapped file, "[kernel]" for kernel */
	char file[160];		/* source file when known (python), else "" */
	int line;		/* source line when known, else 0 */
};

/*
 * format "func+0xoff (module)" or "[unknown] (module)" into buf.
 * Python frames with a known file print "func (file:line)" instead.
 * The module part is omitted when the module is unknown. Returns what
 * snprintf() would: the untruncated length, or -1 on bad arguments.
 */
int frame__format(const struct frame *f, char *buf, size_t len);

#endif
