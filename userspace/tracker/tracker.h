/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * One owner for each traced process: the only code that writes per-process
 * BPF state and runs per-process setup. A new loop process: its maps read
 * while it lives, its runtime detected (CPython, node: the frame walkers'
 * layouts into the kernel's tables), its catalogued libraries probed. Every
 * rescan: libraries loaded since, and the processes that are gone (or
 * whose pid now names another process) let go.
 */
#ifndef LOOPWATCH_TRACKER_TRACKER_H
#define LOOPWATCH_TRACKER_TRACKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include "lib/cgroup.h"
#include "lib/cpulimit.h"
#include "lib/lwtypes.h"

struct collector;
struct probes;
struct procs;
struct runtimes;
struct symbols;
struct tracker;

/* notes: where a line per runtime process says whether its frames are walked (NULL: quiet) */
struct tracker *tracker__new(struct collector *c, struct procs *procs, struct symbols *syms,
			     struct runtimes *rts, struct probes *probes, FILE *notes);
void tracker__free(struct tracker *t);
/*
 * A thread of pid entered its first wait call (or pid was named with -p):
 * take the process on, once: its labels and maps now, the rest of its set-up
 * at the next tracker__settle.
 */
void tracker__new_loop(struct tracker *t, __u32 pid);
/*
 * A process with no loop that woke one from a sleep that made a stall: taken
 * on like a loop's (runtime, unwind tables), without probes, so that its next
 * wake-ups are walked through its own frames, not frame pointers alone. At
 * most TRACKER_MAX_WAKERS of them.
 */
void tracker__waker(struct tracker *t, __u32 pid);
/* The set-up still owed to the processes taken on since the last call. */
void tracker__settle(struct tracker *t);
/* Every tracked process again: libraries loaded late, processes gone. */
void tracker__rescan(struct tracker *t);
/*
 * The process's name as set up (LW_COMM_LEN; after an exec, the new program's
 * once rescanned): kernel events carry the name the loop started under.
 * false when the process is not tracked.
 */
bool tracker__comm(struct tracker *t, __u32 pid, char *comm);
/* A live thread's process and thread names (LW_COMM_LEN each); false when gone. */
bool tracker__names(struct tracker *t, __u32 pid, __u32 tid, char *comm, char *thread);
/* The name a process was started as (proc__started_as), "" when unknown. */
void tracker__started_as(struct tracker *t, __u32 pid, char *buf, size_t len);
/* A live thread's wait for a CPU so far, ns (proc__run_delay); false when gone. */
bool tracker__run_delay(struct tracker *t, __u32 pid, __u32 tid, __u64 *ns);
/*
 * A process's executable and cgroup path, "" when unknown; a path longer
 * than cgroup_len ends in "...", and cg is the identity of the whole path.
 */
void tracker__facts(struct tracker *t, __u32 pid, char *exe, size_t exe_len, char *cgroup,
		    size_t cgroup_len, struct cgroup_identity *cg);
/*
 * Kubernetes names of the pod container an identity names, from the
 * kubelet's log directories under log_dir (tracker__set_kubelet_logs), read
 * once per pod container; all "" when it names no pod or nothing is readable.
 */
void tracker__k8s_names(struct tracker *t, const struct cgroup_identity *cg,
			struct k8s_names *out);
/*
 * The CPU quota the process runs under (proc__cpu_limit), read at most once
 * a second; out->known false when none.
 */
void tracker__cpu_limit(struct tracker *t, __u32 pid, struct cpu_limit *out);
/* Where the host's /var/log is (a DaemonSet mounts it elsewhere); NULL: none. */
void tracker__set_kubelet_logs(struct tracker *t, const char *log_dir);
/* The label of a probe id (the bpf_cookie of its uprobes). */
void tracker__probe_label(const struct tracker *t, __u32 id, char *buf, size_t len);

#endif
