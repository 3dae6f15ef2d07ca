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
#include "dispatch.h"
#include "model.h"
#include "options.h"
#include "procfs.h"
#include "sink.h"
#include "sink_prom.h"
#include "system.h"

/* OUT_NONE: --quiet without --json, a daemon whose output is the --prom-file */
enum output { OUT_TEXT, OUT_JSON, OUT_TUI, OUT_NONE };

/* how often loop processes are rescanned for newly loaded catalogued files */
#define PROBE_RESCAN_S 2.0

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

static void model__syscall_cb(const struct lw_syscall_key *key,
			      const struct lw_syscall_stats *st, void *ctx)
{
	model__add_syscall(ctx, key, st);
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

static struct sink_prom *prom__open(const struct options *opts)
{
	struct sink_prom *sp;
	char err[512];

	if (!opts->prom_file)
		return NULL;
	sp = sink_prom__open(opts->prom_file, opts->prom_per_pid, err, sizeof(err));
	if (!sp)
		fail(err);
	return sp;
}

static const char *probe__label_cb(const void *ctx, __u32 id)
{
	return probes__label(ctx, id);
}

static void model__probe_cb(const struct lw_probe_key *key, const struct lw_probe_stats *st,
			    void *ctx)
{
	struct dispatch *d = ctx;

	model__add_probe(d->model, key, st, probes__label(d->probes, key->id));
}

/* Latest kernel counters into the model, between the ends of two intervals. */
static void model__refresh(struct collector *c, struct model *m)
{
	model__begin_drain(m);
	collector__drain_loops(c, model__ingest_cb, m);
}

/*
 * The per-(process, probe) and per-(process, syscall) aggregates: read only
 * where they are shown (the live view, the Prometheus file, the summary),
 * not at every interval.
 */
static void model__refresh_probes(struct collector *c, struct dispatch *d)
{
	model__clear_probes(d->model);
	if (d->probes)
		collector__drain_probes(c, model__probe_cb, d);
	model__finish_probes(d->model);
}

static int pid__cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return x < y ? -1 : x > y;
}

/* Loop processes may load a catalogued library late (Python imports _json on first use). */
static void probes__refresh(struct dispatch *d)
{
	int *pids = calloc(d->model->nthreads + 1, sizeof(*pids)), n = 0, k = 0;

	if (!pids)
		return;
	for (size_t i = 0; i < d->model->nthreads; i++) {
		if (!d->model->threads[i]->exited)
			pids[n++] = (int)d->model->threads[i]->pid;
	}
	/* each process once, however many loop threads it has */
	qsort(pids, (size_t)n, sizeof(*pids), pid__cmp);
	for (int i = 0; i < n; i++) {
		if (!k || pids[k - 1] != pids[i])
			pids[k++] = pids[i];
	}
	probes__rescan(d->probes, pids, k);
	free(pids);
}

static void model__refresh_syscalls(struct collector *c, struct model *m)
{
	model__clear_syscalls(m);
	collector__drain_syscalls(c, model__syscall_cb, m);
	model__sort_syscalls(m);
}

/* One line when writes start failing, not one per write: a daemon's log stays readable. */
static int prom__write(struct sink_prom *sp, struct collector *c, struct dispatch *d,
		       const char *path)
{
	struct model *m = d->model;
	static int last_err;
	__u64 dropped, loops_full;
	int err;

	model__refresh_syscalls(c, m);
	model__refresh_probes(c, d);
	collector__counters(c, &dropped, &loops_full);
	sink_prom__set_kernel_counters(sp, dropped, loops_full);
	err = sink_prom__write(sp, m, clock__mono());

	if (err && err != last_err)
		fprintf(stderr, "loopwatch: cannot write %s: %s\n", path, strerror(-err));
	last_err = err;
	return err;
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
	case OUT_NONE:
		break;
	}
}

/* Wait until the deadline, a quit key or a signal. */
static void wait__until(struct collector *c, enum output out, double deadline)
{
	double left = deadline - clock__mono();
	int timeout_ms = left > 0 ? (int)(left * 1000) + 1 : 0;

	if (out == OUT_TUI) {
		/* events keep flowing while the view waits for a key */
		while (timeout_ms > 0 && !exiting) {
			int slice = timeout_ms < 100 ? timeout_ms : 100;

			collector__poll(c, slice);
			if (sink_tui__poll_quit(0))
				exiting = 1;
			timeout_ms -= slice;
		}
		return;
	}
	collector__poll(c, timeout_ms);
}

int main(int argc, char **argv)
{
	struct collector_opts copts = {};
	struct dispatch disp = {};
	struct alert_opts aopts = {};
	struct collector *c = NULL;
	struct sink_prom *sp = NULL;
	struct model *m = NULL;
	double start, last, next, next_prom, next_rescan = 0, end;
	enum output out;
	struct options opts;
	char err[256];
	int status = 1;

	options__parse(&opts, argc, argv);
	if (opts.list_probes) {
		probes__list(stdout);
		return 0;
	}
	preflight(&opts);
	sp = prom__open(&opts);
	if (opts.json)
		out = OUT_JSON;
	else if (opts.quiet)
		out = OUT_NONE;
	else
		out = isatty(STDOUT_FILENO) ? OUT_TUI : OUT_TEXT;

	copts.pids = opts.pids;
	copts.npids = opts.npids;
	copts.comm = opts.has_comm ? opts.comm : NULL;
	copts.verbose = opts.verbose;
	copts.stall_threshold_ns = (__u64)(opts.threshold_ms * 1e6);
	/* an --alert-ms under --threshold still needs those iterations sent up */
	copts.slow_threshold_ns = (__u64)((opts.alert_ms < opts.threshold_ms ? opts.alert_ms
									 : opts.threshold_ms) * 1e6);
	disp.stall_threshold_ns = copts.stall_threshold_ns;
	copts.block_threshold_ns = (__u64)(opts.block_threshold_ms * 1e6);
	copts.sample_hz = opts.sample_hz;
	copts.probe_threshold_ns = (__u64)(opts.probe_threshold_ms * 1e6);
	copts.on_event = dispatch__event;
	copts.ctx = &disp;
	m = model__new();
	if (!m) {
		fprintf(stderr, "loopwatch: out of memory\n");
		goto cleanup;
	}
	c = collector__open(&copts, err, sizeof(err));
	if (!c) {
		fprintf(stderr, "loopwatch: %s\n", err);
		goto cleanup;
	}
	disp.model = m;
	m->stuck_ns = copts.stall_threshold_ns;
	disp.out = stdout;
	disp.output = out == OUT_JSON ? DISPATCH_JSON : out == OUT_TEXT ? DISPATCH_TEXT
									: DISPATCH_NONE;
	aopts.alert_ms = opts.alert_ms;
	aopts.log_path = opts.alert_log;
	/* the live view owns the terminal; --quiet keeps stderr for errors */
	aopts.log_lines = out != OUT_TUI && !opts.quiet;
	aopts.exec_path = opts.alert_exec;
	aopts.every_s = opts.alert_every_s;
	aopts.json = out == OUT_JSON ? stdout : NULL;
	disp.alerter = alerter__new(&aopts, err, sizeof(err));
	if (!disp.alerter) {
		fprintf(stderr, "loopwatch: %s\n", err);
		status = 2;
		goto cleanup;
	}
	disp.attr = attributor__new(c);
	if (!disp.attr) {
		fprintf(stderr, "loopwatch: cannot start the symbolizer\n");
		goto cleanup;
	}
	disp.probes = probes__new(c, !opts.no_builtin_probes, opts.probes, opts.nprobes, err,
				  sizeof(err));
	if (!disp.probes) {
		fprintf(stderr, "loopwatch: %s\n", err);
		status = 2;
		goto cleanup;
	}
	attributor__set_labeler(disp.attr, probe__label_cb, disp.probes);
	signal(SIGINT, signal__handle);
	signal(SIGTERM, signal__handle);
	if (!opts.quiet)
		fprintf(stderr, "loopwatch: tracing event loops%s; Ctrl-C to stop\n",
			opts.npids ? " of the given pids" : "");
	if (out == OUT_TUI && sink_tui__open()) {
		fprintf(stderr, "loopwatch: cannot start the terminal view\n");
		goto cleanup;
	}

	start = last = clock__mono();
	next = start + opts.interval_s;
	next_prom = start + opts.prom_interval_s;
	end = opts.duration_s > 0 ? start + opts.duration_s : 0;
	/* at once: the file's appearance tells a supervisor that tracing runs */
	if (sp)
		prom__write(sp, c, &disp, opts.prom_file);
	while (!exiting) {
		double now, deadline = end && end < next ? end : next;
		bool stop, drained = false;

		if (sp && next_prom < deadline)
			deadline = next_prom;
		wait__until(c, out, deadline);
		now = clock__mono();
		stop = exiting || (end && now >= end) || pids__all_gone(&opts);
		if (now >= next || stop) {
			model__refresh(c, m);
			if (out == OUT_TUI)
				model__refresh_probes(c, &disp);
			model__end_interval(m, now - last);
			m->run_s = now - start;
			interval__emit(out, m, clock__wall());
			last = now;
			while (next <= now)
				next += opts.interval_s;
			drained = true;
			if (now >= next_rescan) {
				probes__refresh(&disp);
				next_rescan = now + PROBE_RESCAN_S;
			}
		}
		if (stop)
			break;
		if (sp && now >= next_prom) {
			if (!drained)
				model__refresh(c, m);
			prom__write(sp, c, &disp, opts.prom_file);
			while (next_prom <= now)
				next_prom += opts.prom_interval_s;
		}
	}
	sink_tui__close();
	model__refresh_syscalls(c, m);
	model__refresh_probes(c, &disp);
	if (out == OUT_JSON)
		sink_json__summary(stdout, m, clock__wall());
	else if (out != OUT_NONE)
		sink_text__summary(stdout, m, clock__wall());
	status = 0;
	if (sp && prom__write(sp, c, &disp, opts.prom_file))
		status = 1;
cleanup:
	sink_tui__close();
	probes__free(disp.probes);
	attributor__free(disp.attr);
	alerter__free(disp.alerter);
	sink_prom__close(sp);
	model__free(m);
	collector__destroy(c);
	return status;
}
