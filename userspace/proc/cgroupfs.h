/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The host's cgroup v2 tree, for --cgroup and --service: a cgroup named by
 * its path (as /proc/PID/cgroup shows it, or under the mount) or by the
 * service its last component is, resolved to what BPF compares: the
 * cgroup's id (its directory's inode) and level (0: the root).
 */
#ifndef LOOPWATCH_PROC_CGROUPFS_H
#define LOOPWATCH_PROC_CGROUPFS_H

#include <stddef.h>
#include <stdint.h>

struct cgroup_ref {
	uint64_t id;
	uint32_t level;
	char path[512];		/* from the v2 root, for messages */
};

/* The v2 tree's mount: a hybrid host's unified one, else /sys/fs/cgroup; NULL: none. */
const char *cgroupfs__v2_root(void);
/*
 * PATH: "/system.slice/nginx.service", or the same under the v2 mount. 0, or
 * -1 with a reason in err.
 */
int cgroupfs__by_path(const char *path, struct cgroup_ref *out, char *err, size_t errlen);
/*
 * NAME: a cgroup whose last component is NAME or NAME.service (a systemd
 * unit, a scope, a container's directory), the shallowest found; 0, or -1
 * with a reason in err (none, or more than one at that depth).
 */
int cgroupfs__by_service(const char *name, struct cgroup_ref *out, char *err, size_t errlen);

#endif
