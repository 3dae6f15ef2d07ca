// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "sinks/outfile.h"

/* O_NOFOLLOW: a link planted under the temp name is not followed */
static int tmp__open(const char *tmp_path)
{
	int fd = open(tmp_path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);

	return fd < 0 ? -errno : fd;
}

int outfile__init(struct outfile *o, const char *path, const char *flag, char *err,
		  size_t errlen)
{
	struct stat st;
	int fd;

	memset(o, 0, sizeof(*o));
	o->flag = flag;
	o->path = strdup(path);
	o->tmp_path = malloc(strlen(path) + 32);
	if (!o->path || !o->tmp_path) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	/* beside the target, so that rename() stays on one filesystem */
	sprintf(o->tmp_path, "%s.%d.tmp", path, (int)getpid());
	if (!stat(path, &st) && S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s %s is a directory; want a file", flag, path);
		return -1;
	}
	fd = tmp__open(o->tmp_path);
	if (fd < 0) {
		snprintf(err, errlen, "%s %s: cannot create a file there: %s", flag, path,
			 strerror(-fd));
		return -1;
	}
	close(fd);
	unlink(o->tmp_path);
	return 0;
}

static void outfile__complain(struct outfile *o, int err)
{
	if (err && err != o->last_err)
		fprintf(stderr, "loopwatch: cannot write %s %s: %s\n", o->flag, o->path,
			strerror(-err));
	o->last_err = err;
}

FILE *outfile__begin(struct outfile *o)
{
	int fd = tmp__open(o->tmp_path);
	FILE *f;

	if (fd < 0) {
		outfile__complain(o, fd);
		return NULL;
	}
	f = fdopen(fd, "w");
	if (!f) {
		outfile__complain(o, -errno);
		close(fd);
		unlink(o->tmp_path);
	}
	return f;
}

int outfile__commit(struct outfile *o, FILE *f)
{
	int err = ferror(f) ? -EIO : 0;

	if (fclose(f) && !err)
		err = -errno;
	if (!err && rename(o->tmp_path, o->path))
		err = -errno;
	if (err)
		unlink(o->tmp_path);
	outfile__complain(o, err);
	return err;
}

void outfile__free(struct outfile *o)
{
	free(o->path);
	free(o->tmp_path);
	o->path = o->tmp_path = NULL;
}
