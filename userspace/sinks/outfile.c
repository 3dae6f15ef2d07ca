// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "sinks/outfile.h"

/* target__check's -errno-like code: what is there is not ours to replace */
#define TARGET_NOT_REGULAR	4096

/* A regular file or nothing: 0, or -errno. */
static int target__check(const char *path)
{
	struct stat st;

	if (lstat(path, &st))
		return errno == ENOENT ? 0 : -errno;
	return S_ISREG(st.st_mode) ? 0 : -TARGET_NOT_REGULAR;
}

/*
 * O_EXCL|O_NOFOLLOW: nothing that squats the name is opened (a FIFO would
 * block, a link would be followed); it carries our pid, so it is removed
 * and the create tried once more. 0644 and the umask, or 0644 whatever it is.
 */
static int tmp__create(const struct outfile *o)
{
	int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
	int fd = open(o->tmp_path, flags, 0644);

	if (fd < 0 && errno == EEXIST && !unlink(o->tmp_path))
		fd = open(o->tmp_path, flags, 0644);
	if (fd < 0)
		return -errno;
	if ((o->flags & OUTFILE_WORLD_READABLE) && fchmod(fd, 0644)) {
		int err = -errno;

		close(fd);
		unlink(o->tmp_path);
		return err;
	}
	return fd;
}

/* The directory part of path, for messages. */
static void path__dir(const char *path, char *buf, size_t len)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		snprintf(buf, len, ".");
	else if (slash == path)
		snprintf(buf, len, "/");
	else
		snprintf(buf, len, "%.*s", (int)(slash - path), path);
}

/*
 * Temp files of instances that died mid-write (kill -9, a crash) are named
 * .BASE.PID.tmp: the regular files whose PID runs no more are removed, once,
 * at start.
 */
static void tmp__remove_stale(const char *path)
{
	const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
	char dir[PATH_MAX], prefix[NAME_MAX + 2];
	size_t plen;
	struct dirent *de;
	DIR *d;
	int dfd;

	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path + 1) : 1,
		 slash ? path : ".");
	plen = (size_t)snprintf(prefix, sizeof(prefix), ".%s.", base);
	d = plen < sizeof(prefix) ? opendir(dir) : NULL;
	if (!d)
		return;
	dfd = dirfd(d);
	while ((de = readdir(d))) {
		const char *pid_s = de->d_name + plen;
		struct stat st;
		char *end;
		long pid;

		if (strncmp(de->d_name, prefix, plen))
			continue;
		errno = 0;
		pid = strtol(pid_s, &end, 10);
		if (errno || end == pid_s || pid <= 0 || strcmp(end, ".tmp") || pid == getpid())
			continue;
		if ((!kill((pid_t)pid, 0) || errno != ESRCH) ||
		    fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			continue;
		unlinkat(dfd, de->d_name, 0);
	}
	closedir(d);
}

int outfile__init(struct outfile *o, const char *path, const char *flag, unsigned int flags,
		  char *err, size_t errlen)
{
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX];
	struct stat st;
	int fd;

	memset(o, 0, sizeof(*o));
	o->flag = flag;
	o->flags = flags;
	o->path = strdup(path);
	o->tmp_path = malloc(strlen(path) + 32);
	if (!o->path || !o->tmp_path) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	sprintf(o->tmp_path, "%.*s.%s.%d.tmp", slash ? (int)(slash - path + 1) : 0, path,
		slash ? slash + 1 : path, (int)getpid());
	if (!stat(path, &st) && S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s %s is a directory; want a file in it", flag, path);
		return -1;
	}
	if (target__check(path)) {
		snprintf(err, errlen, "%s %s is not a regular file; want a regular file or a new "
			 "name", flag, path);
		return -1;
	}
	tmp__remove_stale(path);
	fd = tmp__create(o);
	if (fd < 0) {
		path__dir(path, dir, sizeof(dir));
		snprintf(err, errlen, "%s %s: cannot create a file in %s: %s", flag, path, dir,
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
			err == -TARGET_NOT_REGULAR ? "no longer a regular file" : strerror(-err));
	o->last_err = err;
	if (err && !o->first_err)
		o->first_err = err;
}

int outfile__status(const struct outfile *o)
{
	return o->first_err;
}

FILE *outfile__begin(struct outfile *o)
{
	FILE *f;

	free(o->buf);
	o->buf = NULL;
	o->len = 0;
	f = open_memstream(&o->buf, &o->len);
	if (!f)
		outfile__complain(o, -errno);
	return f;
}

static int fd__write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The rendered text to the temp file, renamed over the path: 0 or -errno. */
static int outfile__replace(struct outfile *o)
{
	int fd = tmp__create(o), err;

	if (fd < 0)
		return fd;
	err = fd__write_all(fd, o->buf, o->len);
	/* the rename must not publish a file whose blocks the disk never took */
	if (!err && fsync(fd))
		err = -errno;
	if (close(fd) && !err)
		err = -errno;
	if (!err)
		err = target__check(o->path);
	if (!err && rename(o->tmp_path, o->path))
		err = -errno;
	if (err)
		unlink(o->tmp_path);
	return err;
}

int outfile__commit(struct outfile *o, FILE *f)
{
	/* only memory can fail a memory stream */
	int err = ferror(f) ? -ENOMEM : 0;

	if (fclose(f) && !err)
		err = -ENOMEM;
	if (!err)
		err = outfile__replace(o);
	free(o->buf);
	o->buf = NULL;
	o->len = 0;
	outfile__complain(o, err);
	return err;
}

void outfile__free(struct outfile *o)
{
	free(o->path);
	free(o->tmp_path);
	free(o->buf);
	o->path = o->tmp_path = o->buf = NULL;
}
