// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include "proc/cgroupfs.h"

const char *cgroupfs__v2_root(void)
{
	static const char *const roots[] = { "/sys/fs/cgroup/unified", "/sys/fs/cgroup" };
	struct statfs fs;

	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
		if (!statfs(roots[i], &fs) && fs.f_type == CGROUP2_SUPER_MAGIC)
			return roots[i];
	}
	return NULL;
}

static uint32_t path__depth(const char *rel)
{
	uint32_t n = 0;

	for (const char *p = rel; *p; p++) {
		if (*p != '/' && (p == rel || p[-1] == '/'))
			n++;
	}
	return n;
}

static int ref__fill(const char *root, const char *rel, struct cgroup_ref *out, char *err,
		     size_t errlen)
{
	char full[1024];
	struct stat st;

	if (strstr(rel, "/..") || !strncmp(rel, "..", 2)) {
		snprintf(err, errlen, "'%s': no .. in a cgroup path", rel);
		return -1;
	}
	snprintf(full, sizeof(full), "%s/%s", root, rel[0] == '/' ? rel + 1 : rel);
	if (stat(full, &st) || !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "no cgroup %s (looked in %s)", rel, root);
		return -1;
	}
	out->id = st.st_ino;
	out->level = path__depth(rel);
	snprintf(out->path, sizeof(out->path), "%s%s", rel[0] == '/' ? "" : "/", rel);
	return 0;
}

int cgroupfs__by_path(const char *path, struct cgroup_ref *out, char *err, size_t errlen)
{
	const char *root = cgroupfs__v2_root();
	size_t n;

	if (!root) {
		snprintf(err, errlen, "no cgroup v2 tree mounted (/sys/fs/cgroup[/unified])");
		return -1;
	}
	n = strlen(root);
	/* the same cgroup under the mount */
	if (!strncmp(path, root, n) && (path[n] == '/' || !path[n]))
		path += n;
	if (!*path)
		path = "/";
	return ref__fill(root, path, out, err, errlen);
}

/* a walk of the tree, breadth first, bounded */
#define SERVICE_MAX_DEPTH 8
#define SERVICE_MAX_DIRS 20000

struct walk {
	char (*queue)[512];
	size_t head, tail, cap;
};

int cgroupfs__by_service(const char *name, struct cgroup_ref *out, char *err, size_t errlen)
{
	const char *root = cgroupfs__v2_root();
	struct walk w = { .cap = SERVICE_MAX_DIRS };
	char unit[300], found[512] = "";
	uint32_t found_level = 0;
	int nfound = 0, ret = -1;

	if (!root) {
		snprintf(err, errlen, "no cgroup v2 tree mounted (/sys/fs/cgroup[/unified])");
		return -1;
	}
	if (!*name || strchr(name, '/') || strlen(name) > 255) {
		snprintf(err, errlen, "invalid service name '%s'", name);
		return -1;
	}
	snprintf(unit, sizeof(unit), "%s.service", name);
	w.queue = calloc(w.cap, sizeof(*w.queue));
	if (!w.queue) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	w.queue[w.tail++][0] = '\0';
	while (w.head < w.tail) {
		const char *rel = w.queue[w.head++];
		uint32_t level = path__depth(rel);
		char dir[1024];
		struct dirent *de;
		DIR *d;

		/* the shallowest matches only: a deeper one is inside it or elsewhere */
		if (nfound && level >= found_level)
			break;
		if (level >= SERVICE_MAX_DEPTH)
			continue;
		snprintf(dir, sizeof(dir), "%s%s", root, rel);
		d = opendir(dir);
		if (!d)
			continue;
		while ((de = readdir(d))) {
			char child[512];

			if (de->d_type != DT_DIR || de->d_name[0] == '.')
				continue;
			if (snprintf(child, sizeof(child), "%s/%s", rel, de->d_name) >=
			    (int)sizeof(child))
				continue;
			if (!strcmp(de->d_name, name) || !strcmp(de->d_name, unit)) {
				if (!nfound++)
					memcpy(found, child, sizeof(found));
				found_level = level + 1;
			}
			if (w.tail < w.cap)
				memcpy(w.queue[w.tail++], child, sizeof(child));
		}
		closedir(d);
	}
	if (!nfound)
		snprintf(err, errlen, "no cgroup named %s or %s under %s", name, unit, root);
	else if (nfound > 1)
		snprintf(err, errlen, "%d cgroups are named %s at the same depth (one is %s): "
			 "give --cgroup its path", nfound, name, found);
	else
		ret = ref__fill(root, found, out, err, errlen);
	free(w.queue);
	return ret;
}
