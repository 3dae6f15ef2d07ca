// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Plain text, appended: a table per interval, a line per event, a summary at the end. */
#include <stdlib.h>
#include "sinks/rows.h"
#include "sinks/sink.h"
#include "sinks/stream.h"
#include "sinks/text.h"

/* rows of each table in the summary */
#define TEXT_SUMMARY_ROWS 20

static bool text__wanted(const struct sink_config *cfg)
{
	return !cfg->json && !cfg->quiet && !cfg->tty;
}

static int text__open(struct sink *s, const struct sink_config *cfg, char *err, size_t errlen)
{
	s->priv = stream__new(cfg->out, "stdout", err, errlen);
	return s->priv ? 0 : -1;
}

static FILE *text__out(const struct sink *s)
{
	const struct stream *st = s->priv;

	return st->f;
}

static void text__interval(struct sink *s, const struct model *m, double ts)
{
	FILE *out = text__out(s);
	char when[16], row[256];
	size_t n;
	struct loop_thread **v = model__sorted(m, false, &n);

	time__format(when, sizeof(when), ts);
	fprintf(out, "%s  %zu active loop threads\n%s\n", when, n, loop_row__header());
	for (size_t i = 0; v && i < n; i++) {
		loop_row__format(row, sizeof(row), v[i], &v[i]->interval, m->interval_s);
		fprintf(out, "%s\n", row);
	}
	if (m->interval_dropped)
		fprintf(out, "%s DROPPED %llu events: the ring buffer was full (%llu in all)\n", when,
			(unsigned long long)m->interval_dropped,
			(unsigned long long)m->events_dropped);
	fputc('\n', out);
	free(v);
	stream__flush(s->priv);
}

static void text__stall(struct sink *s, const struct stall_report *r)
{
	FILE *out = text__out(s);
	char when[16], throttled[48] = "", gil[32] = "";

	time__format(when, sizeof(when), r->ts);
	if (r->throttled_ns)
		snprintf(throttled, sizeof(throttled), " throttled %.1f ms of it;",
			 ms(r->throttled_ns));
	if (r->gil_ns)
		snprintf(gil, sizeof(gil), " gil %.1f ms;", ms(r->gil_ns));
	fprintf(out, "%s STALL %u/%u %s/%s %.1f ms: cpu %.1f blocked %.1f runq %.1f ms;%s%s %s: %s\n",
		when, r->pid, r->tid, r->comm, r->thread, ms(r->duration_ns), ms(r->oncpu_ns),
		ms(r->blocked_ns), ms(r->runq_ns), throttled, gil, stall_cause__name(r->cause),
		r->top);
	stream__flush(s->priv);
}

static void text__block(struct sink *s, const struct block_report *r)
{
	FILE *out = text__out(s);
	char when[16], top[256];

	time__format(when, sizeof(when), r->ts);
	stack_report__top(&r->stack, top, sizeof(top));
	fprintf(out, "%s BLOCK %u/%u %s %s %.1f ms%s%s; %s\n", when, r->pid, r->tid, r->comm,
		r->syscall, ms(r->duration_ns), r->path[0] ? " " : "", r->path, top);
	stream__flush(s->priv);
}

static void text__probe(struct sink *s, const struct probe_report *r)
{
	FILE *out = text__out(s);
	char when[16];

	time__format(when, sizeof(when), r->ts);
	fprintf(out, "%s PROBE %u/%u %s %s %.1f ms\n", when, r->pid, r->tid, r->comm, r->label,
		ms(r->duration_ns));
	stream__flush(s->priv);
}

static void text__stuck(struct sink *s, const struct stuck_report *k)
{
	const struct stall_report *r = &k->so_far;
	FILE *out = text__out(s);
	char when[16], call[320] = "", gil[32] = "";

	time__format(when, sizeof(when), k->now_ts);
	if (r->gil_ns)
		snprintf(gil, sizeof(gil), " gil %.1f ms;", ms(r->gil_ns));
	if (k->in_call)
		snprintf(call, sizeof(call), " in %s for %.1f s%s%s;", k->call.syscall,
			 (double)k->call.duration_ns / 1e9, k->call.path[0] ? " " : "",
			 k->call.path);
	fprintf(out, "%s STUCK %u/%u %s/%s %.1f s so far: cpu %.1f blocked %.1f runq %.1f ms;%s%s "
		"%s: %s\n", when, r->pid, r->tid, r->comm, r->thread,
		(double)r->duration_ns / 1e9, ms(r->oncpu_ns), ms(r->blocked_ns), ms(r->runq_ns),
		gil, call, stall_cause__name(r->cause), r->top);
	stream__flush(s->priv);
}

static void probes__print(FILE *out, const struct model *m)
{
	char row[256];

	if (!m->nprobes)
		return;
	fprintf(out, "\nProbed functions (%%BUSY: share of the process's loop busy time):\n%s\n",
		probe_row__header());
	for (size_t i = 0; i < m->nprobes && i < TEXT_SUMMARY_ROWS; i++) {
		probe_row__format(row, sizeof(row), &m->probes[i]);
		fprintf(out, "%s\n", row);
	}
}

static void syscalls__print(FILE *out, const struct model *m)
{
	char row[256];

	if (!m->nsyscalls)
		return;
	fprintf(out, "\nBlocking syscalls of loop threads (inside busy periods):\n%s\n",
		syscall_row__header());
	for (size_t i = 0; i < m->nsyscalls && i < TEXT_SUMMARY_ROWS; i++) {
		syscall_row__format(row, sizeof(row), &m->syscalls[i]);
		fprintf(out, "%s\n", row);
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
	for (size_t i = 0; i < n && i < TEXT_SUMMARY_ROWS; i++) {
		offender_row__format(row, sizeof(row), &v[i]);
		fprintf(out, "%s\n", row);
	}
	free(v);
}

static void functions__print(FILE *out, const struct model *m)
{
	char row[512];
	size_t n;
	const struct func_stat **v = attribution__sorted(m->attr, false, FUNC_SORT_SELF, 0, &n);

	if (v && n) {
		fprintf(out, "\nTop functions (stall time by function: SELF in its own code and "
			"what it called\nin libc, the kernel or the Python stdlib; %%BUSY: SELF "
			"over the process's loop busy time):\n%s\n", func_row__header());
		for (size_t i = 0; i < n && i < TEXT_SUMMARY_ROWS; i++) {
			func_row__format(row, sizeof(row), v[i], &v[i]->run,
					 model__process_busy_ns(m, v[i]->pid, false));
			fprintf(out, "%s\n", row);
		}
	}
	free(v);
}

void text__summary_print(FILE *out, const struct model *m)
{
	struct loop_view sum;
	char row[256];
	size_t n;
	struct loop_thread **v = model__sorted(m, true, &n);

	fprintf(out, "Summary: %zu loop threads over %.1f s", n, m->run_s);
	if (m->exited_forgotten)
		fprintf(out, " (and %llu exited ones not kept)",
			(unsigned long long)m->exited_forgotten);
	fputc('\n', out);
	if (m->events_dropped)
		fprintf(out, "Dropped: %llu events (stalls, blocking and probed calls) lost to a "
			"full ring buffer\n", (unsigned long long)m->events_dropped);
	fprintf(out, "LAG: what an event arriving at a random moment waits (arrival-weighted); "
		"STALL%%: share of the time\nin iterations over the threshold; per iteration: "
		"each iteration counted once, however long.\n");
	fprintf(out, "%s\n", loop_row__header());
	for (size_t i = 0; v && i < n; i++) {
		loop_thread__summary(v[i], &sum);
		loop_row__format(row, sizeof(row), v[i], &sum, m->run_s);
		fprintf(out, "%s\n", row);
	}
	free(v);
	syscalls__print(out, m);
	probes__print(out, m);
	functions__print(out, m);
	offenders__print(out, m);
	fflush(out);
}

static int text__summary(struct sink *s, const struct model *m, double ts)
{
	(void)ts;
	text__summary_print(text__out(s), m);
	return stream__flush(s->priv);
}

static void text__close(struct sink *s)
{
	free(s->priv);
}

/* A pipe's reader gone (`| head`) ends the run within a poll, not at the next write. */
static int text__pollfds(struct sink *s, struct pollfd *fds, int max)
{
	return max > 0 ? stream__pollfd(s->priv, fds) : 0;
}

static bool text__ready(struct sink *s, const struct pollfd *fd)
{
	return stream__ready(s->priv, fd);
}

const struct sink_ops text_sink = {
	.name = "text",
	.wanted = text__wanted,
	.open = text__open,
	.interval = text__interval,
	.stall = text__stall,
	.block = text__block,
	.probe = text__probe,
	.stuck = text__stuck,
	.summary = text__summary,
	.close = text__close,
	.pollfds = text__pollfds,
	.ready = text__ready,
};
