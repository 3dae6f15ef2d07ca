// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <string.h>
#include "sinks/stream.h"

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
