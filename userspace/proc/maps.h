/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * /proc/PID/maps, parsed once: the only parser of that format. A snapshot is
 * immutable and reference-counted, so a reader can keep the one it resolved
 * symbols against while the process table re-reads a newer one.
 */
#ifndef LOOPWATCH_PROC_MAPS_H
#define LOOPWATCH_PROC_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum proc_map_type {
	PROC_MAP_FILE,		/* a path: an ELF file, usually */
	PROC_MAP_ANON,		/* no name: heap, JIT code, thread stacks */
	PROC_MAP_PSEUDO,	/* [vdso], [stack], [heap], … */
};

struct proc_mapping {
	uint64_t start;
	uint64_t end;
	uint64_t offset;	/* into the file */
	uint64_t inode;
	dev_t dev;		/* as stat(2)'s st_dev */
	enum proc_map_type type;
	bool exec;
	bool write;
	bool deleted;		/* " (deleted)" was stripped from the path */
	const char *path;	/* NULL for anonymous mappings */
};

struct proc_maps {
	unsigned int refs;
	unsigned int gen;	/* a new number for every snapshot read */
	struct proc_mapping *v;	/* sorted by start */
	size_t n;
	char *text;		/* the file's text: the paths point into it */
};

/*
 * Parse the text of a maps file (untrusted: odd lines are skipped), taking
 * ownership of text (malloc'ed, NUL-terminated at len). NULL on no memory.
 */
struct proc_maps *proc_maps__parse(char *text, size_t len);
void proc_maps__get(struct proc_maps *m);
void proc_maps__put(struct proc_maps *m);
/* The mapping that holds addr, or NULL. */
const struct proc_mapping *proc_maps__find(const struct proc_maps *m, uint64_t addr);
/* Same object, same place: what was resolved for one holds for the other. */
bool proc_mapping__same(const struct proc_mapping *a, const struct proc_mapping *b);
const char *proc_mapping__basename(const struct proc_mapping *m);

#endif
