/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Sinks turn the model into one output each; they never touch BPF. */
#ifndef LOOPWATCH_SINK_H
#define LOOPWATCH_SINK_H

#include <stdio.h>
#include "model.h"

/* JSON lines (sink_json.c) */
void sink_json__interval(FILE *out, const struct model *m, double ts);
void sink_json__summary(FILE *out, const struct model *m, double ts);

void sink_json__stall(FILE *out, const struct stall_report *r);
void sink_json__block(FILE *out, const struct block_report *r);
void sink_json__probe(FILE *out, const struct probe_report *r);
/* {"kind":…,"func":…,…} frames of one stack */
void json__frames(FILE *out, const struct stack_report *s);

/* Plain text table, appended (sink_text.c) */
void sink_text__stall(FILE *out, const struct stall_report *r);
void sink_text__block(FILE *out, const struct block_report *r);
void sink_text__probe(FILE *out, const struct probe_report *r);
/* the probes table, shared with the live view */
const char *probe_row__header(void);
void probe_row__format(char *buf, size_t len, const struct probe_agg *a);
/* the offenders table, shared with the live view */
const char *offender_row__header(void);
void offender_row__format(char *buf, size_t len, const struct offender *o);
void sink_text__interval(FILE *out, const struct model *m, double ts);
void sink_text__summary(FILE *out, const struct model *m, double ts);
/* One table row (no newline) and its header, shared with the live view. */
const char *loop_row__header(void);
void loop_row__format(char *buf, size_t len, const struct loop_thread *t,
		      const struct loop_view *v, double seconds);

/* Live full-screen view (sink_tui.c) */
int sink_tui__open(void);
void sink_tui__interval(const struct model *m, double ts);
/* true when the user asked to quit (q) */
bool sink_tui__poll_quit(int timeout_ms);
void sink_tui__close(void);

#endif
