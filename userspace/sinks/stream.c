// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "sinks/stream.h"

struct stream *stream__new(FILE *f, const char *name, char *err, size_t errlen)
{
	struct stream *st = calloc(1, sizeof(*st));

	if (!st) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	st->f = f;
	st->name = name;
	return st;
}

int stream__flush(struct stream *s)
{
	int err = 0;

	errno = 0;
	if (fflush(s->f) || ferror(s->f))
		err = errno ? -errno : -EIO;
	if (err && !s->err) {
		s->err = err;
		fprintf(stderr, "loopwatch: cannot write %s: %s; output lost from here on\n",
			s->name, strerror(-err));
	}
	return s->err;
}
