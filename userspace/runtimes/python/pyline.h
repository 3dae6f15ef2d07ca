/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * CPython line tables: which source line an instruction belongs to, the
 * way PyCode_Addr2Line() answers it. Pure functions over bytes copied from
 * the target, so every index is checked: a garbled table gives a wrong or
 * -1 line, never an out-of-bounds read. Formats: Objects/lnotab_notes.txt
 * (3.8-3.10) and Objects/locations.md (3.11+).
 */
#ifndef LOOPWATCH_SYMBOLS_PYLINE_H
#define LOOPWATCH_SYMBOLS_PYLINE_H

#include <stddef.h>
#include <stdint.h>

enum pyline_format {
	PYLINE_LNOTAB,		/* 3.8, 3.9: co_lnotab, position in bytes */
	PYLINE_LINETABLE_310,	/* 3.10: co_linetable, position in bytes */
	PYLINE_LOCATIONS,	/* 3.11+: location table, position in code units */
};

/*
 * The line of the instruction at pos (bytes or code units, as the format
 * says) of a code object whose first line is first; first when pos < 0,
 * -1 when the instruction has no line.
 */
int pyline__find(enum pyline_format fmt, const uint8_t *tab, size_t len, int first, int64_t pos);

#endif
