/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The CPU quota a process runs under: the cgroup its CPU controller puts it
 * in (proc__cpu_cgroup), then that cgroup's quota files, or its nearest
 * ancestor's that has a quota, under the host's cgroup mounts (v1's
 * /sys/fs/cgroup/cpu; v2's /sys/fs/cgroup/unified on a hybrid host, else
 * /sys/fs/cgroup). Parsing is lib/cpulimit.c's.
 */
#ifndef LOOPWATCH_PROC_CPULIMIT_H
#define LOOPWATCH_PROC_CPULIMIT_H

#include <stdbool.h>
#include "lib/cpulimit.h"

struct proc;

/* false (out->known false) when the process is gone or runs under no quota */
bool proc__cpu_limit(struct proc *p, struct cpu_limit *out);

#endif
