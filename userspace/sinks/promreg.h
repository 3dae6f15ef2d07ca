/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The Prometheus registry: the model folded into series, rendered in the
 * text exposition format; what the textfile writes (and a scrape endpoint
 * would serve). Loop threads, and what the kernel aggregates per process:
 * the blocked time of each syscall, the calls of each probe. Counters stay
 * monotonic for loopwatch's lifetime: a thread that exits (or leaves the
 * model), or an aggregate the kernel evicts, keeps its share in the series it
 * counted in.
 */
#ifndef LOOPWATCH_SINKS_PROMREG_H
#define LOOPWATCH_SINKS_PROMREG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include "model/model.h"

/* series of exited threads and processes stay this long with per-pid labels, then go */
#define PROM_GRACE_S 300.0

struct prom_registry;

/* per_pid: pid and tid labels; NULL when out of memory */
struct prom_registry *prom_registry__new(bool per_pid);
void prom_registry__free(struct prom_registry *reg);
/* Folds the model into the series, then prints the exposition to out. now_s: monotonic. */
void prom_registry__render(struct prom_registry *reg, const struct model *m, double now_s,
			   FILE *out);
/* How long the previous write of the exposition took, for its self metric. */
void prom_registry__set_write_time(struct prom_registry *reg, double seconds);
/* Container id (64 hex digits) in a docker/containerd/cri-o/podman cgroup path. */
bool cgroup__container_id(const char *cgroup, char *id, size_t len);

#endif
