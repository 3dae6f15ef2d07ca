/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The table rows the plain text and the live view share: one formatter each. */
#ifndef LOOPWATCH_SINKS_ROWS_H
#define LOOPWATCH_SINKS_ROWS_H

#include <stddef.h>
#include "model/model.h"

static inline double ms(__u64 ns)
{
	return (double)ns / 1e6;
}

/* HH:MM:SS of a unix time, local */
void time__format(char *buf, size_t len, double ts);
void time__rfc3339(char *buf, size_t len, double ts);

/* One loop thread: its numbers over seconds, and the header. */
const char *loop_row__header(void);
void loop_row__format(char *buf, size_t len, const struct loop_thread *t,
		      const struct loop_view *v, double seconds);
/* The same on 80 columns: no tid, one column for both names. */
const char *loop_row__compact_header(void);
void loop_row__compact(char *buf, size_t len, const struct loop_thread *t,
		       const struct loop_view *v, double seconds);
const char *offender_row__header(void);
void offender_row__format(char *buf, size_t len, const struct offender *o);
const char *probe_row__header(void);
void probe_row__format(char *buf, size_t len, const struct probe_agg *a);
/* One function: self time by cause, inclusive, and self over the process's busy_ns. */
const char *func_row__header(void);
void func_row__format(char *buf, size_t len, const struct func_stat *f,
		      const struct func_times *t, __u64 busy_ns);
/* The same on 80 columns: self time and its main cause, so the function keeps its room. */
const char *func_row__compact_header(void);
void func_row__compact(char *buf, size_t len, const struct func_stat *f,
		       const struct func_times *t, __u64 busy_ns);
const char *syscall_row__header(void);
void syscall_row__format(char *buf, size_t len, const struct syscall_agg *a);

#endif
