/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Maps shared by the BPF program files. They are linked into one object by
 * `bpftool gen object`; __weak lets every file that includes this header
 * declare the same map and the linker keep a single copy.
 */
#ifndef LOOPWATCH_MAPS_BPF_H
#define LOOPWATCH_MAPS_BPF_H

#include "loopwatch.h"

/* Loop threads by tid. LRU: tids churn and the map must stay bounded. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, LW_MAX_LOOPS);
	__type(key, __u32);
	__type(value, struct lw_loop);
} loops SEC(".maps") __weak;

/* Processes named by -p, filled by userspace before attach. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, LW_MAX_PIDS);
	__type(key, __u32);
	__type(value, __u8);
} pid_filter SEC(".maps") __weak;

/* A zeroed record to build new entries from: struct lw_loop is too large for the stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lw_loop);
} loop_scratch SEC(".maps") __weak;

#endif /* LOOPWATCH_MAPS_BPF_H */
