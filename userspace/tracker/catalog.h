/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The built-in probes: which functions of which runtimes block loops. Data only. */
#ifndef LOOPWATCH_TRACKER_CATALOG_H
#define LOOPWATCH_TRACKER_CATALOG_H

#include <stddef.h>

struct catalog_entry {
	const char *runtime;	/* what a user would call it */
	const char *file_glob;	/* fnmatch(3) on the mapped file's base name */
	const char *symbol;
	/*
	 * Stripped CPython extensions: the PyType_Spec whose Py_tp_call slot is
	 * the function (json.dumps -> encoder_call is _json.Encoder's tp_call).
	 */
	const char *spec_type;
	const char *label;
	const char *op;		/* encode, decode, compress, … */
};

/* entries at most: a file is checked for all of them in one pass */
#define CATALOG_MAX 64

extern const struct catalog_entry catalog[];
extern const size_t catalog_len;
/* where --list-probes and custom probes look for libraries by name */
extern const char *const catalog_dirs[];

#endif
