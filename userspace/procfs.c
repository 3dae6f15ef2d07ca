// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
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

void str__sanitize(char *s)
{
	for (; *s; s++) {
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
	}
}
