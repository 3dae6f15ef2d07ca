/* SPDX-License-Identifier: GPL-2.0 */
/*
 * symbolize.h - turn raw stack addresses into function/module names.
 *
 * User addresses are resolved through /proc/PID/maps and the ELF symbol
 * tables of the mapped files, kernel addresses through /proc/kallsyms.
 * Everything read from the target process is treated as untrusted: bad
 * input yields frames with an empty func, never an error or a crash.
 *
 * A symbolizer is not thread-safe; use one per thread or lock around it.
 */
#ifndef LOOPWATCH_SYMBOLIZE_H
#define LOOPWATCH_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

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

struct symbolizer;

/* Returns NULL only when out of memory or libelf is unusable. */
struct symbolizer *symbolizer__new(void);
void symbolizer__free(struct symbolizer *s);

/*
 * stack in -> frames out: resolve n addresses of one stack. kernel=true for
 * kernel ips. Returns number of frames written (<= max_out). Never fails
 * hard: unknown addresses give frames with func "" and module set if the
 * mapping is known.
 *
 * Addresses are symbolized as given: callers that want the call site
 * rather than the return address should pass ip - 1 for non-leaf frames.
 */
int symbolizer__symbolize(struct symbolizer *s, int pid, const uint64_t *ips, int n,
			  bool kernel, struct frame *out, int max_out);

/* drop per-process caches (call when a process exits or pid may be reused) */
void symbolizer__forget_pid(struct symbolizer *s, int pid);

/*
 * format "func+0xoff (module)" or "[unknown] (module)" into buf.
 * Python frames with a known file print "func (file:line)" instead.
 * The module part is omitted when the module is unknown. Returns what
 * snprintf() would: the untruncated length, or -1 on bad arguments.
 */
int frame__format(const struct frame *f, char *buf, size_t len);

#endif /* LOOPWATCH_SYMBOLIZE_H */
