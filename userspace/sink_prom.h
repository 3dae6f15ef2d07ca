/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Prometheus text exposition of the model, for node_exporter's textfile
 * collector: loop threads, and what the kernel aggregates per process: the
 * blocked time of each syscall, the calls of each probe. Counters stay
 * monotonic for loopwatch's lifetime: a thread that exits (or leaves the
 * model), or an aggregate the kernel evicts, keeps its share in the series it
 * counted in.
 */
#ifndef LOOPWATCH_SINK_PROM_H
#define LOOPWATCH_SINK_PROM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include "model.h"

/* series of exited threads and processes stay this long with --prom-per-pid, then go */
#define PROM_GRACE_S 300.0

struct sink_prom;

/*
 * Checks that a file can be created beside path (same directory: the rename
 * must stay on one filesystem). NULL with a one-line reason in err.
 */
struct sink_prom *sink_prom__open(const char *path, bool per_pid, char *err, size_t errlen);
void sink_prom__close(struct sink_prom *sp);
/*
 * Folds the model into the series and replaces the file atomically (temp file
 * + rename). now_s is a monotonic clock, for the grace period. 0 or -errno.
 */
int sink_prom__write(struct sink_prom *sp, const struct model *m, double now_s);
/* The kernel side's self counters (collector__counters), for the next write. */
void sink_prom__set_kernel_counters(struct sink_prom *sp, __u64 events_dropped,
				    __u64 loops_full);
/* The same without the file: fold, then print the exposition to out. */
void sink_prom__render(struct sink_prom *sp, const struct model *m, double now_s, FILE *out);
/* Container id (64 hex digits) in a docker/containerd/cri-o/podman cgroup path. */
bool cgroup__container_id(const char *cgroup, char *id, size_t len);

#endif
