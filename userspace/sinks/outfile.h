/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A file written whole and replaced atomically (a temp file beside it,
 * renamed over it), for the outputs written at exit and on SIGUSR1: a
 * reader never sees half of one.
 */
#ifndef LOOPWATCH_SINKS_OUTFILE_H
#define LOOPWATCH_SINKS_OUTFILE_H

#include <stddef.h>
#include <stdio.h>

struct outfile {
	char *path;
	char *tmp_path;
	const char *flag;	/* for messages: "--report" */
	int last_err;		/* said once */
};

/* Checks that a file can be created beside path: 0, or -1 with a one-line reason. */
int outfile__init(struct outfile *o, const char *path, const char *flag, char *err,
		  size_t errlen);
/* The temp file to write into; NULL (errno set, said once on stderr) on failure. */
FILE *outfile__begin(struct outfile *o);
/* Close f and rename it over the path: 0 or -errno (said once on stderr). */
int outfile__commit(struct outfile *o, FILE *f);
void outfile__free(struct outfile *o);

#endif
