/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Which processes loopwatch watches: those -p, --comm or --cgroup name (any;
 * none of them: every process but those --exclude-comm names, shells by
 * default), and never itself. The
 * options are defined in loop.bpf.c (read-only data set before load);
 * every program whose output follows the filter (loops, probes) asks here.
 * The including file brings vmlinux.h and maps.bpf.h first.
 */
#ifndef LOOPWATCH_FILTER_BPF_H
#define LOOPWATCH_FILTER_BPF_H

#include <bpf/bpf_core_read.h>

extern const volatile __u32 self_pid;
extern const volatile __u64 self_pidns_dev;
extern const volatile __u64 self_pidns_ino;
extern const volatile bool filter_pid;
extern const volatile bool filter_comm;
extern const volatile __u32 ncomms;
extern const volatile char comm_filter[LW_MAX_COMMS][LW_COMM_LEN];
extern const volatile bool filter_cgroup;
extern const volatile __u32 ncgroups;
extern const volatile __u64 cgroup_ids[LW_MAX_CGROUPS];
extern const volatile __u32 cgroup_levels[LW_MAX_CGROUPS];
extern const volatile __u32 nexcludes;
extern const volatile char comm_exclude[LW_MAX_COMMS][LW_COMM_LEN];

static __always_inline bool comm__equal(const char *a, const volatile char *b)
{
	for (int i = 0; i < LW_COMM_LEN; i++) {
		if (a[i] != b[i])
			return false;
		if (!a[i])
			return true;
	}
	return true;
}

/* Is the task's process named one of the first n of names? */
static __always_inline bool comm__in(struct task_struct *task,
				     const volatile char (*names)[LW_COMM_LEN], __u32 n)
{
	char comm[LW_COMM_LEN];

	BPF_CORE_READ_STR_INTO(&comm, task, group_leader, comm);
	for (__u32 i = 0; i < LW_MAX_COMMS; i++) {
		if (i >= n)
			break;
		if (comm__equal(comm, names[i]))
			return true;
	}
	return false;
}

/*
 * Is the current task loopwatch? self_pid is getpid(), the pid in
 * loopwatch's own namespace: in a container with a pid namespace of its own
 * that is not the host's pid the kernel hands BPF, so there (and only there:
 * the namespace is set, the verifier drops this branch otherwise) the pid is
 * taken in that namespace; a task outside it fails the helper and is not us.
 */
static __always_inline bool process__self(__u32 pid)
{
	struct bpf_pidns_info ns;

	if (!self_pidns_ino)
		return pid == self_pid;
	return !bpf_get_ns_current_pid_tgid(self_pidns_dev, self_pidns_ino, &ns, sizeof(ns)) &&
	       ns.tgid == self_pid;
}

/* Is the current task in one of the --cgroup cgroups, or under one? */
static __always_inline bool cgroup__named(void)
{
	for (__u32 i = 0; i < LW_MAX_CGROUPS; i++) {
		if (i >= ncgroups)
			break;
		if (bpf_get_current_ancestor_cgroup_id(cgroup_levels[i]) == cgroup_ids[i])
			return true;
	}
	return false;
}

/* Named by -p, --comm or --cgroup, or no filter at all. */
static __always_inline bool process__named(struct task_struct *task, __u32 pid)
{
	if (!filter_pid && !filter_comm && !filter_cgroup)
		return true;
	if (filter_pid && bpf_map_lookup_elem(&pid_filter, &pid))
		return true;
	if (filter_cgroup && cgroup__named())
		return true;
	return filter_comm && comm__in(task, comm_filter, ncomms);
}

/*
 * A shell waits for its commands in wait4 between two reads of the
 * terminal: its "stalls" are the user's commands, not lag anybody suffers.
 */
static __always_inline bool process__excluded(struct task_struct *task)
{
	return nexcludes && comm__in(task, comm_exclude, nexcludes);
}

/* task and pid (its tgid) are the current task's */
static __always_inline bool process__wanted(struct task_struct *task, __u32 pid)
{
	if (process__self(pid))
		return false;
	/* what the user named is watched, whatever its name */
	if (filter_pid || filter_comm || filter_cgroup)
		return process__named(task, pid);
	return !process__excluded(task);
}

#endif /* LOOPWATCH_FILTER_BPF_H */
