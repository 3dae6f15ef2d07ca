// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* loopwatch: find what blocks event loops, from outside the process. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "collector.h"
#include "model.h"
#include "options.h"
#include "procfs.h"
#include "sink.h"
#include "system.h"

enum output { OUT_TEXT, OUT_JSON, OUT_TUI };

static volatile sig_atomic_t exiting;

static void signal__handle(int sig)
{
	(void)sig;
	exiting = 1;
}

static double clock__mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double clock__wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void model__ingest_cb(const struct lw_loop *loop, void *ctx)
{
	model__ingest(ctx, loop);
}

static bool pids__all_gone(const struct options *opts)
{
	for (int i = 0; i < opts->npids; i++) {
		if (proc__exists(opts->pids[i]))
			return false;
	}
	return opts->npids > 0;
}

static void fail(const char *what)
{
	fprintf(stderr, "loopwatch: %s\n", what);
	exit(2);
}

static void preflight(const struct options *opts)
{
	char err[256];

	if (system__check_privileges(err, sizeof(err)))
		fail(err);
	if (system__check_btf(err, sizeof(err)))
		fail(err);
	for (int i = 0; i < opts->npids; i++) {
		if (!proc__exists(opts->pids[i])) {
			snprintf(err, sizeof(err), "no such process: %d", opts->pids[i]);
			fail(err);
		}
	}
}

static void interval__emit(enum output out, struct model *m, double ts)
{
	switch (out) {
	case OUT_JSON:
		sink_json__interval(stdout, m, ts);
		break;
	case OUT_TUI:
		sink_tui__interval(m, ts);
		break;
	case OUT_TEXT:
		sink_text__interval(stdout, m, ts);
		break;
	}
}

/* Wait until the deadline, a quit key or a signal. */
static void wait__until(struct collector *c, enum output out, double deadline)
{
	double left = deadline - clock__mono();
	int timeout_ms = left > 0 ? (int)(left * 1000) + 1 : 0;

	if (out == OUT_TUI) {
		if (sink_tui__poll_quit(timeout_ms))
			exiting = 1;
		return;
	}
	collector__poll(c, timeout_ms);
}

int main(int argc, char **argv)
{
	struct collector_opts copts = {};
	struct collector *c = NULL;
	struct model *m = NULL;
	double start, last, next, end;
	enum output out;
	struct options opts;
	char err[256];
	int status = 1;

	options__parse(&opts, argc, argv);
	preflight(&opts);
	out = opts.json ? OUT_JSON : isatty(STDOUT_FILENO) ? OUT_TUI : OUT_TEXT;

	copts.pids = opts.pids;
	copts.npids = opts.npids;
	copts.comm = opts.has_comm ? opts.comm : NULL;
	copts.verbose = opts.verbose;
	c = collector__open(&copts, err, sizeof(err));
	if (!c) {
		fprintf(stderr, "loopwatch: %s\n", err);
		goto cleanup;
	}
	m = model__new();
	if (!m) {
		fprintf(stderr, "loopwatch: out of memory\n");
		goto cleanup;
	}
	signal(SIGINT, signal__handle);
	signal(SIGTERM, signal__handle);
	fprintf(stderr, "loopwatch: tracing event loops%s; Ctrl-C to stop\n",
		opts.npids ? " of the given pids" : "");
	if (out == OUT_TUI && sink_tui__open()) {
		fprintf(stderr, "loopwatch: cannot start the terminal view\n");
		goto cleanup;
	}

	start = last = clock__mono();
	next = start + opts.interval_s;
	end = opts.duration_s > 0 ? start + opts.duration_s : 0;
	while (!exiting) {
		double now, deadline = end && end < next ? end : next;

		wait__until(c, out, deadline);
		now = clock__mono();
		if (now >= next || (end && now >= end) || exiting || pids__all_gone(&opts)) {
			model__begin_drain(m);
			collector__drain_loops(c, model__ingest_cb, m);
			model__end_interval(m, now - last);
			m->run_s = now - start;
			interval__emit(out, m, clock__wall());
			last = now;
			while (next <= now)
				next += opts.interval_s;
		}
		if ((end && now >= end) || pids__all_gone(&opts))
			break;
	}
	sink_tui__close();
	if (out == OUT_JSON)
		sink_json__summary(stdout, m, clock__wall());
	else
		sink_text__summary(stdout, m, clock__wall());
	status = 0;
cleanup:
	sink_tui__close();
	model__free(m);
	collector__destroy(c);
	return status;
}
