// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdlib.h>
#include <time.h>
#include "sink.h"

static double ms(__u64 ns)
{
	return (double)ns / 1e6;
}

static void time__format(char *buf, size_t len, double ts)
{
	time_t secs = (time_t)ts;
	struct tm tm;

	localtime_r(&secs, &tm);
	strftime(buf, len, "%H:%M:%S", &tm);
}

const char *loop_row__header(void)
{
	return "    PID     TID COMM            THREAD           ITER/s  UTIL%    P50ms    P90ms"
	       "    P99ms  P99.9ms    MAXms";
}

void loop_row__format(char *buf, size_t len, const struct loop_thread *t,
		      const struct loop_view *v, double seconds)
{
	double rate = seconds > 0 ? (double)v->iterations / seconds : 0;

	int n = snprintf(buf, len, "%7u %7u %-15s %-15s %7.0f %6.1f %8.3f %8.3f %8.3f %8.3f %8.3f",
			 t->pid, t->tid, t->comm, t->thread, rate,
			 100.0 * loop_view__utilization(v), ms(v->lag.p50_ns), ms(v->lag.p90_ns),
			 ms(v->lag.p99_ns), ms(v->lag.p999_ns), ms(v->lag.max_ns));

	/* still inside an iteration longer than an interval: hung, or nearly */
	if (t->busy_now_ns >= 1000000000ull && n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, "  STUCK %.1fs", (double)t->busy_now_ns / 1e9);
}

void sink_text__interval(FILE *out, const struct model *m, double ts)
{
	char when[16], row[256];
	size_t n;
	struct loop_thread **v = model__sorted(m, false, &n);

	time__format(when, sizeof(when), ts);
	fprintf(out, "%s  %zu active loop threads\n%s\n", when, n, loop_row__header());
	for (size_t i = 0; v && i < n; i++) {
		loop_row__format(row, sizeof(row), v[i], &v[i]->interval, m->interval_s);
		fprintf(out, "%s\n", row);
	}
	fputc('\n', out);
	free(v);
	fflush(out);
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

void sink_text__stall(FILE *out, const struct stall_report *r)
{
	char when[16];

	time__format(when, sizeof(when), r->ts);
	fprintf(out, "%s STALL %u/%u %s/%s %.1f ms: cpu %.1f blocked %.1f runq %.1f ms; %s: %s\n",
		when, r->pid, r->tid, r->comm, r->thread, ms(r->duration_ns), ms(r->oncpu_ns),
		ms(r->blocked_ns), ms(r->runq_ns), stall_cause__name(r->cause), r->top);
	fflush(out);
}

void sink_text__block(FILE *out, const struct block_report *r)
{
	char when[16];

	time__format(when, sizeof(when), r->ts);
	fprintf(out, "%s BLOCK %u/%u %s %s %.1f ms%s%s\n", when, r->pid, r->tid, r->comm,
		r->syscall, ms(r->duration_ns), r->path[0] ? " " : "", r->path);
	fflush(out);
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

void sink_text__probe(FILE *out, const struct probe_report *r)
{
	char when[16];

	time__format(when, sizeof(when), r->ts);
	fprintf(out, "%s PROBE %u/%u %s %s %.1f ms\n", when, r->pid, r->tid, r->comm, r->label,
		ms(r->duration_ns));
	fflush(out);
}

static void probes__print(FILE *out, const struct model *m)
{
	char row[256];

	if (!m->nprobes)
		return;
	fprintf(out, "\nProbed functions (%%BUSY: share of the process's loop busy time):\n%s\n",
		probe_row__header());
	for (size_t i = 0; i < m->nprobes && i < 20; i++) {
		probe_row__format(row, sizeof(row), &m->probes[i]);
		fprintf(out, "%s\n", row);
	}
}

static void syscalls__print(FILE *out, const struct model *m)
{
	if (!m->nsyscalls)
		return;
	fprintf(out, "\nBlocking syscalls of loop threads (inside busy periods):\n"
		"    PID COMM            SYSCALL                 COUNT  BLOCKEDms    P50ms    P99ms"
		"    MAXms\n");
	for (size_t i = 0; i < m->nsyscalls && i < 20; i++) {
		const struct syscall_agg *a = &m->syscalls[i];

		fprintf(out, "%7u %-15s %-20s %8llu %10.1f %8.3f %8.3f %8.3f\n", a->pid, a->comm,
			a->name, (unsigned long long)a->count, ms(a->total_ns), ms(a->lat.p50_ns),
			ms(a->lat.p99_ns), ms(a->lat.max_ns));
	}
}

static void offenders__print(FILE *out, const struct model *m)
{
	char row[512];
	size_t n;
	struct offender *v = model__offenders(m, 0, &n);

	if (!v || !n) {
		free(v);
		return;
	}
	fprintf(out, "\nTop offenders (stalls by culprit):\n%s\n", offender_row__header());
	for (size_t i = 0; i < n && i < 20; i++) {
		offender_row__format(row, sizeof(row), &v[i]);
		fprintf(out, "%s\n", row);
	}
	free(v);
}

void sink_text__summary(FILE *out, const struct model *m, double ts)
{
	struct loop_view sum;
	char row[256];
	size_t n;
	struct loop_thread **v = model__sorted(m, true, &n);

	(void)ts;
	fprintf(out, "Summary: %zu loop threads over %.1f s\n%s\n", n, m->run_s,
		loop_row__header());
	for (size_t i = 0; v && i < n; i++) {
		loop_thread__summary(v[i], &sum);
		loop_row__format(row, sizeof(row), v[i], &sum, m->run_s);
		fprintf(out, "%s\n", row);
	}
	free(v);
	syscalls__print(out, m);
	probes__print(out, m);
	offenders__print(out, m);
	fflush(out);
}
