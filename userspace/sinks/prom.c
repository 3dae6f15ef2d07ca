// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The Prometheus textfile: the registry's exposition written every
 * --prom-interval seconds and at exit, replacing the file atomically, for
 * node_exporter's textfile collector.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "lib/clock.h"
#include "sinks/promreg.h"
#include "sinks/sink.h"

struct prom_file {
	struct prom_registry *reg;
	char *path;
	char *tmp_path;
	double interval_s;
	double next_s;		/* monotonic: when the next write is due */
	int last_err;		/* said once, not once per write */
};

/*
 * The temp file sits beside the target so rename() is atomic, and its name
 * does not end in .prom so the textfile collector never reads it half
 * written. O_EXCL|O_NOFOLLOW: a link planted under that name is not
 * followed; a leftover of ours from a crash is removed once.
 */
static int tmp__create(const char *tmp_path)
{
	int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
	int fd = open(tmp_path, flags, 0644);

	if (fd < 0 && errno == EEXIST) {
		unlink(tmp_path);
		fd = open(tmp_path, flags, 0644);
	}
	if (fd < 0)
		return -errno;
	/* the umask must not hide the metrics from an unprivileged node_exporter */
	if (fchmod(fd, 0644)) {
		int err = -errno;

		close(fd);
		unlink(tmp_path);
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
 * What the rename would replace must be a regular file, or nothing:
 * --prom-file /dev/null would otherwise turn the machine's /dev/null into a
 * metrics file, a FIFO or socket would be destroyed for its users.
 */
static int target__check(const char *path)
{
	struct stat st;

	if (lstat(path, &st))
		return errno == ENOENT ? 0 : -errno;
	return S_ISREG(st.st_mode) ? 0 : -EEXIST;
}

/*
 * Temp files of instances that died mid-write (kill -9, a crash) are named
 * .BASE.PID.tmp: the ones whose PID runs no more are removed, once, at start.
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

static bool prom__wanted(const struct sink_config *cfg)
{
	return cfg->prom_file != NULL;
}

static void prom__free(struct prom_file *pf)
{
	prom_registry__put(pf->reg);
	free(pf->path);
	free(pf->tmp_path);
	free(pf);
}

/*
 * Checks that a file can be created beside the path (same directory: the
 * rename must stay on one filesystem).
 */
static int prom__open(struct sink *s, const struct sink_config *cfg, char *err, size_t errlen)
{
	struct prom_file *pf = calloc(1, sizeof(*pf));
	const char *path = cfg->prom_file, *slash = strrchr(path, '/');
	struct prom_options popts;
	char dir[256];
	struct stat st;
	int fd;

	if (!pf) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	pf->interval_s = cfg->prom_interval_s;
	prom_options__from_config(&popts, cfg);
	pf->reg = prom_registry__shared(&popts);
	pf->path = strdup(path);
	pf->tmp_path = malloc(strlen(path) + 32);
	if (!pf->reg || !pf->path || !pf->tmp_path) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	/* .loopwatch.prom.PID.tmp: hidden, per instance, not matching *.prom */
	sprintf(pf->tmp_path, "%.*s.%s.%d.tmp", slash ? (int)(slash - path + 1) : 0, path,
		slash ? slash + 1 : path, (int)getpid());
	if (!stat(path, &st) && S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "--prom-file %s is a directory; want a file in it", path);
		goto fail;
	}
	if (target__check(path)) {
		snprintf(err, errlen, "--prom-file %s is not a regular file; want a regular file or "
			 "a new name", path);
		goto fail;
	}
	tmp__remove_stale(path);
	fd = tmp__create(pf->tmp_path);
	if (fd < 0) {
		path__dir(path, dir, sizeof(dir));
		snprintf(err, errlen, "--prom-file %s: cannot create a file in %s: %s", path, dir,
			 strerror(-fd));
		goto fail;
	}
	close(fd);
	unlink(pf->tmp_path);
	s->priv = pf;
	return 0;
fail:
	prom__free(pf);
	return -1;
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

/*
 * The exposition to the temp file, renamed over the target: 0 or -errno.
 * Rendered in memory first, so a failed write says why (ENOSPC, EDQUOT)
 * instead of a stdio error flag's "Input/output error".
 */
static int prom__write_file(struct prom_file *pf, const struct model *m, double now_s)
{
	double t0 = clock__mono();
	char *text = NULL;
	size_t len = 0;
	FILE *out;
	int fd, err;

	out = open_memstream(&text, &len);
	if (!out)
		return -ENOMEM;
	prom_registry__render(pf->reg, m, now_s, out);
	err = ferror(out) ? -ENOMEM : 0;
	if (fclose(out) && !err)
		err = -ENOMEM;
	if (err) {
		free(text);
		return err;
	}
	fd = tmp__create(pf->tmp_path);
	if (fd < 0) {
		free(text);
		return fd;
	}
	/*
	 * No fsync: readers only need the rename to be atomic, and the file is
	 * rewritten every interval anyway; a crash loses at most one interval.
	 */
	err = fd__write_all(fd, text, len);
	free(text);
	if (close(fd) && !err)
		err = -errno;
	if (!err)
		err = target__check(pf->path);
	if (!err && rename(pf->tmp_path, pf->path))
		err = -errno;
	if (err)
		unlink(pf->tmp_path);
	prom_registry__set_write_time(pf->reg, clock__mono() - t0);
	return err;
}

/* One line when writes start failing, not one per write: a daemon's log stays readable. */
static int prom__write(struct prom_file *pf, const struct model *m, double now_s)
{
	int err = prom__write_file(pf, m, now_s);

	if (err)
		prom_registry__count(pf->reg, PROM_SELF_WRITE_ERRORS, 1);
	if (err && err != pf->last_err)
		fprintf(stderr, "loopwatch: cannot write %s: %s\n", pf->path,
			err == -EEXIST ? "no longer a regular file" : strerror(-err));
	pf->last_err = err;
	return err;
}

/* at once: the file's appearance tells a supervisor that tracing runs */
static int prom__start(struct sink *s, const struct model *m, double now)
{
	struct prom_file *pf = s->priv;

	(void)m;
	pf->next_s = now;
	return 0;
}

static double prom__due(const struct sink *s)
{
	const struct prom_file *pf = s->priv;

	return pf->next_s;
}

static int prom__flush(struct sink *s, const struct model *m, double now)
{
	struct prom_file *pf = s->priv;

	while (pf->next_s <= now)
		pf->next_s += pf->interval_s;
	return prom__write(pf, m, now);
}

static int prom__summary(struct sink *s, const struct model *m, double ts)
{
	(void)ts;
	return prom__write(s->priv, m, clock__mono());
}

static void prom__close(struct sink *s)
{
	if (s->priv)
		prom__free(s->priv);
}

const struct sink_ops prom_sink = {
	.name = "Prometheus textfile",
	.wanted = prom__wanted,
	.open = prom__open,
	.start = prom__start,
	.due = prom__due,
	.flush = prom__flush,
	.summary = prom__summary,
	.close = prom__close,
};
