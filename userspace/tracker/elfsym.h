/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Where a function starts in an ELF file, as the file offset a uprobe needs:
 * by symbol (.symtab, .dynsym, or the debug file found by build-id), or, for
 * stripped CPython extensions, through the type spec that names the function
 * as a slot (PyType_Spec.slots, e.g. Py_tp_call of "_json.Encoder").
 */
#ifndef LOOPWATCH_TRACKER_ELFSYM_H
#define LOOPWATCH_TRACKER_ELFSYM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum elfsym_how {
	ELFSYM_SYMTAB,		/* the file's own .symtab */
	ELFSYM_DYNSYM,		/* exported symbols */
	ELFSYM_DEBUGFILE,	/* /usr/lib/debug/.build-id/xx/yyyy.debug */
	ELFSYM_SPEC_SLOT,	/* PyType_Spec slot, read through relocations */
};

const char *elfsym_how__name(enum elfsym_how how);

/* 0 and the file offset of name in path; -ENOENT if absent, other -errno. */
int elfsym__find(const char *path, const char *name, uint64_t *file_off, enum elfsym_how *how);
/*
 * Which of names (n of them) the file defines as functions in its own
 * symbol tables (.symtab, .dynsym), in one pass: found[i] and offs[i], the
 * file offset. The number found, or -errno.
 */
int elfsym__find_each(const char *path, const char *const *names, size_t n, uint64_t *offs,
		      bool *found);
/*
 * The function in slot slot_id of the PyType_Spec named type_name (e.g.
 * "_json.Encoder", Py_tp_call = 50): 0 and its file offset, or -ENOENT.
 */
int elfsym__find_spec_slot(const char *path, const char *type_name, int slot_id,
			   uint64_t *file_off);

#endif
