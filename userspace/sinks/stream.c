// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

int stream__pollfd(const struct stream *s, struct pollfd *fd)
{
	struct stat st;
	int n = fileno(s->f);

	if (s->err || n < 0 || fstat(n, &st) || !(S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)))
		return 0;
	/* no events asked: POLLERR and POLLHUP come anyway */
	*fd = (struct pollfd){ .fd = n, .events = 0 };
	return 1;
}

bool stream__ready(struct stream *s, const struct pollfd *fd)
{
	if (!(fd->revents & (POLLERR | POLLHUP | POLLNVAL)))
		return true;
	if (!s->err) {
		s->err = -EPIPE;
		fprintf(stderr, "loopwatch: cannot write %s: %s; stopping\n", s->name,
			strerror(EPIPE));
	}
	return false;
}
