/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The separate debug file of a stripped ELF file (its .symtab, its
 * .debug_frame): by build-id under /usr/lib/debug/.build-id, the build-id
 * checked; else by .gnu_debuglink beside the file, in its .debug/ and under
 * /usr/lib/debug, checked by build-id when both files have one, else by the
 * CRC-32 of a file of at most 256 MiB (read once per file). Looked for inside the traced process's
 * root first, then in ours (the debug package may be installed on the host).
 */
#ifndef LOOPWATCH_PROC_DEBUGFILE_H
#define LOOPWATCH_PROC_DEBUGFILE_H

#include "proc/elf.h"

struct proc;

/*
 * The debug file of h, the file at path as p sees it (p NULL: as we see it;
 * path may be NULL when only the build-id can tell): 0 with out open (close
 * it with elf__close), or -ENOENT.
 */
int debugfile__open(struct proc *p, const char *path, const struct elf_handle *h,
		    struct elf_handle *out);

#endif
