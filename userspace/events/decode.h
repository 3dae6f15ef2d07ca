/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Kernel events to reports: stacks read from the kernel's maps and named by
 * symbols/, numbers in plain units, times on the wall clock, names sanitized.
 */
#ifndef LOOPWATCH_EVENTS_DECODE_H
#define LOOPWATCH_EVENTS_DECODE_H

#include "kernel/collector.h"
#include "model/report.h"

struct decoder;
struct symbols;

/* names a probe id (its bpf_cookie) */
typedef void (*probe_label_fn)(const void *ctx, __u32 id, char *buf, size_t len);

struct decoder *decoder__new(struct collector *c, struct symbols *syms, probe_label_fn label,
			     const void *label_ctx);
void decoder__free(struct decoder *d);
/* The report owns memory until *_report__free. */
void decoder__stall(struct decoder *d, const struct lw_stall_event *e, struct stall_report *out);
void decoder__block(struct decoder *d, const struct lw_block_event *e, struct block_report *out);
/* What a blocking call's fd was, as BPF read it: a path, a socket's peer, a pipe. */
void fd_info__format(const struct lw_fd_info *fd, char *buf, size_t len);
void decoder__probe(struct decoder *d, const struct lw_probe_event *e, struct probe_report *out);
/*
 * A loop record whose iteration has lasted until now_ns (CLOCK_MONOTONIC), as a
 * report, its time split as the iteration's end will split it: run_delay_ns,
 * the thread's run_delay as the record was read (NULL: unknown), gives its
 * wait for a CPU so far, which the kernel counts only at the end.
 */
void decoder__stuck(struct decoder *d, const struct lw_loop *l, __u64 now_ns,
		    const __u64 *run_delay_ns, struct stuck_report *out);

#endif
