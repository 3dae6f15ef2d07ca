/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The kernel's unwind tables (bpf/unwind.bpf.c): the table of each file a
 * traced process maps executable, built once (symbols/cfi.c) and shared by
 * every process that maps the file (by device and inode), released when no
 * traced process maps it any more; and each process's table of executable
 * mappings. The space is preallocated and bounded: a file that does not fit
 * is walked with frame pointers, its frames marked, and said once.
 */
#ifndef LOOPWATCH_TRACKER_CFITABLES_H
#define LOOPWATCH_TRACKER_CFITABLES_H

#include <stddef.h>
#include "lib/lwtypes.h"

struct collector;
struct proc;
struct cfi_tables;

/* NULL when out of memory. */
struct cfi_tables *cfi_tables__new(struct collector *c);
void cfi_tables__free(struct cfi_tables *u);
/* p's executable mappings as of its latest maps, their files' tables loaded. */
void cfi_tables__update(struct cfi_tables *u, struct proc *p);
/* pid is gone (or let go): its mapping table and its files' references. */
void cfi_tables__drop(struct cfi_tables *u, __u32 pid);

struct cfi_tables_stats {
	size_t files;		/* with a table in the kernel */
	size_t rows;		/* in use, of rows_max */
	size_t rows_max;
	size_t procs;		/* processes with a mapping table */
	double build_s;		/* CPU time building tables, in all */
};

void cfi_tables__stats(const struct cfi_tables *u, struct cfi_tables_stats *st);

#endif
