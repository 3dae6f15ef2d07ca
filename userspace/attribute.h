/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Turns raw stall and blocking-call events into reports: stacks read and symbolized. */
#ifndef LOOPWATCH_ATTRIBUTE_H
#define LOOPWATCH_ATTRIBUTE_H

#include "collector.h"
#include "report.h"

struct attributor;

/* names a probe id; ctx is what attributor__set_labeler was given */
typedef const char *(*probe_label_fn)(const void *ctx, __u32 id);

struct attributor *attributor__new(struct collector *c);
void attributor__free(struct attributor *a);
void attributor__set_labeler(struct attributor *a, probe_label_fn fn, const void *ctx);
/*
 * Read pid's mappings now, while it lives: a process that stalls and exits
 * at once still gets its stacks symbolized.
 */
void attributor__prefetch(struct attributor *a, __u32 pid);
/* 0 on success; the report owns memory until *_report__free */
int attributor__stall(struct attributor *a, const struct lw_stall_event *e,
		      struct stall_report *out);
int attributor__block(struct attributor *a, const struct lw_block_event *e,
		      struct block_report *out);
int attributor__probe(struct attributor *a, const struct lw_probe_event *e,
		      struct probe_report *out);

#endif
