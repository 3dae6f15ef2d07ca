/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Maps shared by the BPF program files. They are linked into one object by
 * `bpftool gen object`; __weak lets every file that includes this header
 * declare the same map and the linker keep a single copy.
 */
#ifndef LOOPWATCH_MAPS_BPF_H
#define LOOPWATCH_MAPS_BPF_H

#include "lw_abi.h"

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

#define LW_MAX_SYSCALL_STATS 1024

/* LRU: processes come and go; the oldest (process, syscall) pairs make room. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, LW_MAX_SYSCALL_STATS);
	__type(key, struct lw_syscall_key);
	__type(value, struct lw_syscall_stats);
} syscall_stats SEC(".maps") __weak;

/* Never written: the zeroed value new syscall_stats entries start from. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lw_syscall_stats);
} syscall_zero SEC(".maps") __weak;

/*
 * User and kernel stacks of samples and blocking calls, deduplicated by hash.
 * Never cleared: ids are taken with BPF_F_REUSE_STACKID, so a new stack
 * replaces the old one in its bucket instead of failing once the map has
 * filled; an event is read within milliseconds, long before that matters.
 */
struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__uint(value_size, LW_STACK_DEPTH * sizeof(__u64));
} stacks SEC(".maps") __weak;

/* Only what crosses a threshold: stalls and blocking calls. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} events SEC(".maps") __weak;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LW_CTR_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps") __weak;

/* Options, set by userspace before load. */
const volatile __u64 stall_threshold_ns __weak = 10000000;
/* slow iterations reported to userspace: lower than a stall when alerts want it */
const volatile __u64 slow_threshold_ns __weak = 10000000;
const volatile __u64 block_threshold_ns __weak = 1000000;

#endif /* LOOPWATCH_MAPS_BPF_H */
