/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A stream the outputs append to (stdout: text, JSON lines). stdio keeps only
 * an error flag; the reason of the first failed flush (ENOSPC, EPIPE) is kept
 * here, said once on stderr, and ends the run with a non-zero status.
 */
#ifndef LOOPWATCH_SINKS_STREAM_H
#define LOOPWATCH_SINKS_STREAM_H

#include <poll.h>
#include <stdbool.h>
#include <stdio.h>

struct stream {
	FILE *f;
	const char *name;	/* for messages: "stdout" */
	int err;		/* the first failure: -errno, sticky */
};

/* A stream over f named name in messages; NULL with a reason in err. */
struct stream *stream__new(FILE *f, const char *name, char *err, size_t errlen);
/* Flush: 0, or the first failure's -errno (said once on stderr). */
int stream__flush(struct stream *s);
/*
 * A pipe or socket's reader can go away while nothing is written (`| head
 * -1` on a quiet host): its fd polled for that, 1; 0 for files and terminals.
 */
int stream__pollfd(const struct stream *s, struct pollfd *fd);
/* After poll(2): false if the reader has gone (the run ends, as on EPIPE). */
bool stream__ready(struct stream *s, const struct pollfd *fd);

#endif
