/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Alerts on stalls: a log line, a JSON line, a program run; rate-limited per process. */
#ifndef LOOPWATCH_ALERT_H
#define LOOPWATCH_ALERT_H

#include <stdio.h>
#include "report.h"

struct alert_opts {
	double alert_ms;	/* a stall at or over this alerts */
	const char *log_path;	/* NULL: log lines go to stderr */
	bool log_lines;		/* false: no log lines (the live view owns the terminal) */
	const char *exec_path;	/* NULL: run nothing */
	double every_s;		/* per-process rate limit; 0: none */
	FILE *json;		/* NULL: no JSON alert lines */
};

struct alerter;

/* NULL with a one-line reason in err (an unusable log file or program) */
struct alerter *alerter__new(const struct alert_opts *opts, char *err, size_t errlen);
void alerter__stall(struct alerter *a, const struct stall_report *r);
/* says what the rate limit still holds back, reaps programs run */
void alerter__free(struct alerter *a);

#endif
