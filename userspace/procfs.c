// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "procfs.h"

bool proc__exists(int pid)
{
	char path[32];

	if (pid <= 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	return access(path, F_OK) == 0;
}

static bool file__read_all(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return true;
}

static bool file__read_line(const char *path, char *buf, size_t len)
{
	if (!file__read_all(path, buf, len))
		return false;
	buf[strcspn(buf, "\n")] = '\0';
	return true;
}

bool proc__read_comm(int pid, int tid, char *buf, size_t len)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", pid, tid);
	if (!file__read_line(path, buf, len))
		return false;
	str__sanitize(buf);
	return true;
}

bool proc__read_exe(int pid, char *buf, size_t len)
{
	char path[32];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	n = readlink(path, buf, len - 1);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	str__sanitize(buf);
	return true;
}

bool proc__read_cgroup(int pid, char *buf, size_t len)
{
	char path[32], text[1024], *line, *save = NULL;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	if (!file__read_all(path, text, sizeof(text)))
		return false;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "0::", 3))
			continue;
		snprintf(buf, len, "%s", line + 3);
		str__sanitize(buf);
		return true;
	}
	return false;
}

int fd__reopen_regular(int pfd, struct stat *st)
{
	char self[64];
	int fd = -1;

	if (pfd < 0)
		return -1;
	if (!fstat(pfd, st) && S_ISREG(st->st_mode) && st->st_size > 0) {
		snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
		fd = open(self, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	}
	close(pfd);
	return fd;
}

/*
 * openat2(RESOLVE_IN_ROOT) keeps every symlink jump inside pid's root.
 * Kernels before 5.6 lack it: the plain /proc/PID/root path then, and
 * callers compare the inode with /proc/PID/maps.
 */
int proc__open_in_root(int pid, const char *path)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	char buf[PATH_MAX + 64];
	int dfd, fd;

	snprintf(buf, sizeof(buf), "/proc/%d/root", pid);
	dfd = open(buf, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -1;
	fd = (int)syscall(SYS_openat2, dfd, path, &how, sizeof(how));
	close(dfd);
	if (fd >= 0 || (errno != ENOSYS && errno != EPERM))
		return fd;
	snprintf(buf, sizeof(buf), "/proc/%d/root%s", pid, path);
	return open(buf, O_PATH | O_CLOEXEC);
}

void str__sanitize(char *s)
{
	for (; *s; s++) {
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
	}
}
