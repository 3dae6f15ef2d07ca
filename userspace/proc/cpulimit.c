// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "lib/text.h"
#include "proc/cgroupfs.h"
#include "proc/cpulimit.h"
#include "proc/procs.h"

#define CGROUP_V1_CPU "/sys/fs/cgroup/cpu"

/* A small control file, whole and NUL-terminated; false if unreadable. */
static bool control__read(const char *dir, const char *name, char *buf, size_t len)
{
	char path[PATH_MAX + 32];
	ssize_t n;
	int fd;

	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path))
		return false;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return false;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return true;
}

/* The quota of one cgroup directory, v1's two files or v2's cpu.max; false: none. */
static bool quota__read(const char *dir, bool v1, __u64 *quota_us, __u64 *period_us)
{
	long long quota, period;
	char buf[64];

	if (!v1)
		return control__read(dir, "cpu.max", buf, sizeof(buf)) &&
		       cpu_max__parse(buf, quota_us, period_us);
	if (!control__read(dir, "cpu.cfs_quota_us", buf, sizeof(buf)) ||
	    !cgroup_int__parse(buf, &quota) || quota <= 0)
		return false;
	if (!control__read(dir, "cpu.cfs_period_us", buf, sizeof(buf)) ||
	    !cgroup_int__parse(buf, &period) || period <= 0)
		return false;
	*quota_us = (__u64)quota;
	*period_us = (__u64)period;
	return true;
}

/* A path the kernel printed: absolute, no "." or ".." part to climb out with. */
static bool path__plain(const char *path)
{
	if (path[0] != '/')
		return false;
	for (const char *s = path; *s; s++) {
		if (s[0] == '/' && s[1] == '.' &&
		    (s[2] == '/' || !s[2] || (s[2] == '.' && (s[3] == '/' || !s[3]))))
			return false;
	}
	return true;
}

bool proc__cpu_limit(struct proc *p, struct cpu_limit *out)
{
	char cg[PATH_MAX], dir[PATH_MAX + 64], buf[512];
	const char *root;
	size_t at;
	bool v1;

	memset(out, 0, sizeof(*out));
	if (!proc__cpu_cgroup(p, cg, sizeof(cg), &v1) || !path__plain(cg))
		return false;
	root = v1 ? CGROUP_V1_CPU : cgroupfs__v2_root();
	if (!root)
		return false;
	/* the cgroup itself, then each ancestor below the root: the nearest quota rules */
	for (at = strlen(cg); at > 1; ) {
		snprintf(dir, sizeof(dir), "%s%.*s", root, (int)at, cg);
		if (quota__read(dir, v1, &out->quota_us, &out->period_us)) {
			out->known = true;
			if (at >= sizeof(out->cgroup))
				snprintf(out->cgroup, sizeof(out->cgroup), "%.*s...",
					 (int)sizeof(out->cgroup) - 4, cg);
			else
				snprintf(out->cgroup, sizeof(out->cgroup), "%.*s", (int)at, cg);
			str__sanitize(out->cgroup);
			if (!control__read(dir, "cpu.stat", buf, sizeof(buf)) ||
			    !cpu_stat__parse(buf, &out->stat))
				memset(&out->stat, 0, sizeof(out->stat));
			return true;
		}
		while (at > 1 && cg[at - 1] != '/')
			at--;
		if (at > 1)
			at--;	/* the '/' before the last part */
	}
	return false;
}
