// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdio.h>
#include <time.h>
#include "sinks/rows.h"

void time__format(char *buf, size_t len, double ts)
{
	time_t secs = (time_t)ts;
	struct tm tm;

	localtime_r(&secs, &tm);
	strftime(buf, len, "%H:%M:%S", &tm);
}

/* Logs are read beside other hosts' logs: UTC, milliseconds, RFC 3339. */
void time__rfc3339(char *buf, size_t len, double ts)
{
	time_t secs = (time_t)ts;
	int ms = (int)((ts - (double)secs) * 1000.0);
	char day[32];
	struct tm tm;

	gmtime_r(&secs, &tm);
	strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%03dZ", day, ms < 0 ? 0 : ms > 999 ? 999 : ms);
}

/*
 * Arrival-weighted lag first (LAG*: what an event arriving at a random moment
 * waits; STALL%: share of the time in iterations over --threshold), then the
 * same iterations' percentiles per iteration. The longest iteration is the
 * longest wait of both.
 */
const char *loop_row__header(void)
{
	return "    PID     TID COMM            THREAD           ITER/s  UTIL% STALL%  LAG50ms"
	       "  LAG90ms  LAG99ms    MAXms | per iteration:    P50ms    P90ms    P99ms  P99.9ms";
}

void loop_row__format(char *buf, size_t len, const struct loop_thread *t,
		      const struct loop_view *v, double seconds)
{
	double rate = seconds > 0 ? (double)v->iterations / seconds : 0;

	int n = snprintf(buf, len, "%7u %7u %-15s %-15s %7.0f %6.1f %6.1f %8.3f %8.3f %8.3f %8.3f"
			 " |                %8.3f %8.3f %8.3f %8.3f",
			 t->pid, t->tid, t->comm, t->thread, rate,
			 100.0 * loop_view__utilization(v), 100.0 * v->arrival.over_share,
			 ms(v->arrival.p50_ns), ms(v->arrival.p90_ns), ms(v->arrival.p99_ns),
			 ms(v->lag.max_ns), ms(v->lag.p50_ns), ms(v->lag.p90_ns),
			 ms(v->lag.p99_ns), ms(v->lag.p999_ns));

	/* still inside an iteration longer than an interval: hung, or nearly */
	if (t->busy_now_ns >= 1000000000ull && n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, "  STUCK %.1fs", (double)t->busy_now_ns / 1e9);
}

/*
 * An 80-column terminal cannot hold the full row (~140 columns) and would
 * cut off what matters most: drop the tid, share one column between process
 * and thread names, and keep the arrival-weighted lag and the per-iteration
 * p99 (IT99).
 */
const char *loop_row__compact_header(void)
{
	return "    PID COMM/THREAD       ITER/s UTIL%   LAG50   LAG90   LAG99   MAXms  IT99ms";
}

void loop_row__compact(char *buf, size_t len, const struct loop_thread *t,
		       const struct loop_view *v, double seconds)
{
	char names[2 * LW_COMM_LEN + 2];

	snprintf(names, sizeof(names), "%s/%s", t->comm, t->thread);
	snprintf(buf, len, "%7u %-16.16s %7.0f %5.1f %7.2f %7.2f %7.2f %7.2f %7.2f", t->pid, names,
		 seconds > 0 ? (double)v->iterations / seconds : 0,
		 100.0 * loop_view__utilization(v), ms(v->arrival.p50_ns), ms(v->arrival.p90_ns),
		 ms(v->arrival.p99_ns), ms(v->lag.max_ns), ms(v->lag.p99_ns));
}

const char *offender_row__header(void)
{
	return "    PID COMM             STALLS   TOTALms CAUSE    TOP FRAMES";
}

void offender_row__format(char *buf, size_t len, const struct offender *o)
{
	snprintf(buf, len, "%7u %-15s %7llu %9.1f %-8s %s", o->pid, o->comm,
		 (unsigned long long)o->count, ms(o->total_ns),
		 stall_cause__name(offender__cause(o)), o->top);
}

const char *probe_row__header(void)
{
	return "    PID COMM            PROBE                    CALLS   TOTALms  %BUSY    P50ms"
	       "    P99ms    MAXms";
}

void probe_row__format(char *buf, size_t len, const struct probe_agg *a)
{
	snprintf(buf, len, "%7u %-15s %-22s %8llu %9.1f %6.1f %8.3f %8.3f %8.3f", a->pid, a->comm,
		 a->label, (unsigned long long)a->calls, ms(a->total_ns), 100.0 * a->busy_share,
		 ms(a->lat.p50_ns), ms(a->lat.p99_ns), ms(a->lat.max_ns));
}

const char *syscall_row__header(void)
{
	return "    PID COMM            SYSCALL                 COUNT  BLOCKEDms    P50ms    P99ms"
	       "    MAXms";
}

void syscall_row__format(char *buf, size_t len, const struct syscall_agg *a)
{
	snprintf(buf, len, "%7u %-15s %-20s %8llu %10.1f %8.3f %8.3f %8.3f", a->pid, a->comm,
		 a->name, (unsigned long long)a->count, ms(a->total_ns), ms(a->lat.p50_ns),
		 ms(a->lat.p99_ns), ms(a->lat.max_ns));
}

const char *func_row__header(void)
{
	return "    PID COMM             %BUSY   SELFms    CPUms BLOCKEDms   RUNQms   INCLms"
	       " STALLS FUNCTION";
}

void func_row__format(char *buf, size_t len, const struct func_stat *f,
		      const struct func_times *t, __u64 busy_ns)
{
	__u64 self = func_times__self(t);
	char name[FUNC_NAME_LEN + FUNC_WHERE_LEN + 16];

	func_stat__name(f, name, sizeof(name));
	snprintf(buf, len, "%7u %-15s %6.1f %8.1f %8.1f %9.1f %8.1f %8.1f %6llu %s", f->pid,
		 f->comm, busy_ns ? 100.0 * (double)self / (double)busy_ns : 0.0, ms(self),
		 ms(t->self_ns[CAUSE_CPU]), ms(t->self_ns[CAUSE_BLOCKED]),
		 ms(t->self_ns[CAUSE_RUNQ]), ms(func_times__incl(t)),
		 (unsigned long long)f->stalls, name);
}

const char *func_row__compact_header(void)
{
	return "    PID COMM         %BUSY   SELFms CAUSE   STALLS FUNCTION";
}

void func_row__compact(char *buf, size_t len, const struct func_stat *f,
		       const struct func_times *t, __u64 busy_ns)
{
	__u64 self = func_times__self(t);
	char name[FUNC_NAME_LEN + FUNC_WHERE_LEN + 16];
	int top = CAUSE_CPU;

	for (int c = CAUSE_CPU; c <= CAUSE_RUNQ; c++) {
		if (t->self_ns[c] > t->self_ns[top])
			top = c;
	}
	func_stat__name(f, name, sizeof(name));
	snprintf(buf, len, "%7u %-12.12s %5.1f %8.1f %-7s %6llu %s", f->pid, f->comm,
		 busy_ns ? 100.0 * (double)self / (double)busy_ns : 0.0, ms(self),
		 stall_cause__name((enum stall_cause)top), (unsigned long long)f->stalls, name);
}
