// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * loopwatch: find what blocks event loops, from outside the process.
 *
 * The pipeline, built here in the order data flows: the kernel side
 * (kernel/), the processes it reports (proc/, tracker/), their stacks named
 * (symbols/), kernel events turned into reports (events/), the model they
 * update (model/) and the outputs (sinks/). Then one loop polls the ring
 * buffer and the outputs' descriptors until the end, and prints the summary.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "events/decode.h"
#include "events/events.h"
#include "kernel/collector.h"
#include "kernel/system.h"
#include "lib/clock.h"
#include "model/model.h"
#include "options.h"
#include "proc/procs.h"
#include "runtimes/runtimes.h"
#include "sinks/sink.h"
#include "symbols/symbols.h"
#include "tracker/probes.h"
#include "tracker/tracker.h"

/* how often loop processes are rescanned for newly loaded catalogued files */
#define PROBE_RESCAN_S 2.0

/* a stuck check this close before the interval's drain waits for it */
#define STUCK_COALESCE_S 0.1

/*
 * The ring buffer is read at least this often: the BPF side submits events
 * without waking us (bpf/iteration.bpf.h), all but a new loop's.
 */
#define EVENTS_POLL_S 0.05

static volatile sig_atomic_t exiting, snapshot_wanted;

static void signal__handle(int sig)
{
	if (sig == SIGUSR1)
		snapshot_wanted = 1;
	else
		exiting = 1;
}

/* Everything one run holds, torn down in one place. */
struct run {
	struct options opts;
	struct procs *procs;
	struct runtimes *rts;
	struct symbols *syms;
	struct collector *c;
	struct probes *probes;
	struct tracker *tracker;
	struct decoder *decoder;
	struct model *model;
	struct sinks *sinks;
	struct events events;
	struct model_source source;
	bool idle_said[OPT_MAX_PIDS];	/* -p pids said to have no loop thread */
	bool full_said, refused_said;	/* loop threads not tracked, said once each */
};

static void fail(const char *what)
{
	fprintf(stderr, "loopwatch: %s\n", what);
	exit(2);
}

static void preflight(struct options *opts)
{
	char err[256];
	int n = 0;

	if (system__check_privileges(err, sizeof(err)))
		fail(err);
	if (system__check_btf(err, sizeof(err)))
		fail(err);
	/* a thread id (from top -H, a stack dump) names its process, once */
	for (int i = 0; i < opts->npids; i++) {
		int pid = procs__tgid(opts->pids[i]);
		bool dup = false;

		if (!pid) {
			snprintf(err, sizeof(err), "no such process: %d", opts->pids[i]);
			fail(err);
		}
		for (int k = 0; k < n; k++)
			dup |= opts->pids[k] == pid;
		if (!dup)
			opts->pids[n++] = pid;
	}
	opts->npids = n;
}

static bool pids__all_gone(const struct options *opts)
{
	for (int i = 0; i < opts->npids; i++) {
		if (procs__exists(opts->pids[i]))
			return false;
	}
	return opts->npids > 0;
}

/* ------------------------------------------------------------------ */
/* where the model's numbers come from: the kernel's maps, the tracker's names */

static int source__loops(void *ctx, void (*fn)(const struct lw_loop *, void *), void *arg)
{
	struct run *r = ctx;

	return collector__drain_loops(r->c, fn, arg);
}

static int source__syscalls(void *ctx,
			    void (*fn)(const struct lw_syscall_key *, const struct lw_syscall_stats *,
				       void *),
			    void *arg)
{
	struct run *r = ctx;

	return collector__drain_syscalls(r->c, fn, arg);
}

static int source__probes(void *ctx,
			  void (*fn)(const struct lw_probe_key *, const struct lw_probe_stats *,
				     void *),
			  void *arg)
{
	struct run *r = ctx;

	return r->probes ? collector__drain_probes(r->c, fn, arg) : 0;
}

static void source__counters(void *ctx, __u64 sums[LW_CTR_MAX])
{
	struct run *r = ctx;

	collector__counters(r->c, sums);
}

static void source__probe_label(void *ctx, __u32 id, char *buf, size_t len)
{
	struct run *r = ctx;

	tracker__probe_label(r->tracker, id, buf, len);
}

static void decoder__probe_label(const void *ctx, __u32 id, char *buf, size_t len)
{
	tracker__probe_label(ctx, id, buf, len);
}

static bool source__names(void *ctx, __u32 pid, __u32 tid, char *comm, char *thread)
{
	struct run *r = ctx;

	return tracker__names(r->tracker, pid, tid, comm, thread);
}

static void source__started_as(void *ctx, __u32 pid, char *buf, size_t len)
{
	struct run *r = ctx;

	tracker__started_as(r->tracker, pid, buf, len);
}

static bool source__run_delay(void *ctx, __u32 pid, __u32 tid, __u64 *ns)
{
	struct run *r = ctx;

	return tracker__run_delay(r->tracker, pid, tid, ns);
}

static void source__facts(void *ctx, __u32 pid, char *exe, size_t exe_len, char *cgroup,
			  size_t cgroup_len, struct cgroup_identity *cg)
{
	struct run *r = ctx;

	tracker__facts(r->tracker, pid, exe, exe_len, cgroup, cgroup_len, cg);
}

static void source__k8s_names(void *ctx, const struct cgroup_identity *cg, struct k8s_names *out)
{
	struct run *r = ctx;

	tracker__k8s_names(r->tracker, cg, out);
}

/* ------------------------------------------------------------------ */
/* setup */

static void config__from_options(struct sink_config *cfg, const struct options *opts)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->out = stdout;
	cfg->json = opts->json;
	cfg->quiet = opts->quiet;
	cfg->tty = isatty(STDOUT_FILENO);
	cfg->alert_ms = opts->alert_ms;
	cfg->alert_log = opts->alert_log;
	cfg->alert_exec = opts->alert_exec;
	cfg->alert_every_s = opts->alert_every_s;
	cfg->prom_file = opts->prom_file;
	cfg->prom_interval_s = opts->prom_interval_s;
	cfg->prom_per_pid = opts->prom_per_pid;
	cfg->folded = opts->folded;
	cfg->folded_merge = opts->folded_merge;
	cfg->trace = opts->trace;
	cfg->report = opts->report;
	cfg->pprof = opts->pprof;
	cfg->otlp = opts->otlp;
	cfg->otlp_interval_s = opts->otlp_interval_s;
	cfg->otlp_queue_bytes = (size_t)opts->otlp_queue_kb * 1024;
	cfg->otlp_json = opts->otlp_json;
	cfg->prom_native = opts->prom_native;
	cfg->threshold_ms = opts->threshold_ms;
	cfg->listen = opts->listen;
	cfg->prom_stale_s = opts->prom_stale_s;
	cfg->prom_max_series = (size_t)opts->prom_max_series;
	cfg->prom_min_iterations = (__u64)opts->prom_min_iterations;
}

static void collector_opts__from_options(struct collector_opts *copts, struct run *r)
{
	const struct options *opts = &r->opts;

	memset(copts, 0, sizeof(*copts));
	copts->pids = opts->pids;
	copts->npids = opts->npids;
	copts->comms = opts->comms;
	copts->ncomms = opts->ncomms;
	copts->cgroup_ids = opts->cgroup_ids;
	copts->cgroup_levels = opts->cgroup_levels;
	copts->ncgroups = opts->ncgroups;
	copts->excludes = opts->excludes;
	copts->nexcludes = opts->nexcludes;
	copts->verbose = opts->verbose;
	copts->stall_threshold_ns = (__u64)(opts->threshold_ms * 1e6);
	/* an --alert-ms under --threshold still needs those iterations sent up */
	copts->slow_threshold_ns = (__u64)((opts->alert_ms < opts->threshold_ms ? opts->alert_ms
										 : opts->threshold_ms) * 1e6);
	copts->block_threshold_ns = (__u64)(opts->block_threshold_ms * 1e6);
	copts->sample_hz = opts->sample_hz;
	copts->no_nested_waits = opts->no_nested_waits;
	copts->probe_threshold_ns = (__u64)(opts->probe_threshold_ms * 1e6);
	/* a row and an eighth of a page-index entry (~10 rows per KiB of code), 8 bytes each */
	copts->unwind_rows = ((size_t)opts->unwind_mb << 20) / (8 + 1);
	copts->unwind_pages = copts->unwind_rows / 8;
	copts->ring_bytes = (__u32)opts->ring_mb << 20;
	copts->on_event = events__handle;
	copts->ctx = &r->events;
}

/* 0, or the exit status with the reason already printed */
static int run__open(struct run *r)
{
	struct collector_opts copts;
	struct sink_config cfg;
	char err[512];
	int status;

	config__from_options(&cfg, &r->opts);
	r->sinks = sinks__open(&cfg, err, sizeof(err), &status);
	if (!r->sinks)
		goto fail;
	status = 1;
	collector_opts__from_options(&copts, r);
	r->model = model__new(copts.stall_threshold_ns);
	/* the metrics file folds exited threads at its own pace: keep them until then */
	if (r->model)
		model__keep_exited(r->model, (r->opts.prom_file ? r->opts.prom_interval_s : 0) +
					     r->opts.interval_s);
	r->procs = procs__new();
	r->rts = runtimes__new();
	r->syms = r->procs && r->rts ? symbols__new(r->procs, r->rts) : NULL;
	if (!r->model || !r->syms) {
		snprintf(err, sizeof(err), "out of memory");
		goto fail;
	}
	r->c = collector__open(&copts, err, sizeof(err));
	if (!r->c)
		goto fail;
	r->probes = probes__new(r->c, !r->opts.no_builtin_probes, r->opts.probes,
				r->opts.nprobes, err, sizeof(err));
	if (!r->probes) {
		status = 2;
		goto fail;
	}
	r->tracker = tracker__new(r->c, r->procs, r->syms, r->rts, r->probes,
				  r->opts.quiet ? NULL : stderr);
	if (r->tracker)
		tracker__set_kubelet_logs(r->tracker, r->opts.kubelet_logs);
	r->decoder = r->tracker ? decoder__new(r->c, r->syms, decoder__probe_label, r->tracker)
				: NULL;
	if (!r->decoder) {
		snprintf(err, sizeof(err), "out of memory");
		goto fail;
	}
	r->events = (struct events){
		.decoder = r->decoder,
		.tracker = r->tracker,
		.model = r->model,
		.sinks = r->sinks,
		.stall_threshold_ns = copts.stall_threshold_ns,
		.stuck = stuck_watch__new((__u64)(r->opts.stuck_after_s * 1e9),
					  (__u64)(r->opts.stuck_every_s * 1e9)),
	};
	if (!r->events.stuck) {
		snprintf(err, sizeof(err), "out of memory");
		goto fail;
	}
	r->source = (struct model_source){
		.ctx = r,
		.loops = source__loops,
		.syscalls = source__syscalls,
		.probes = source__probes,
		.counters = source__counters,
		.probe_label = source__probe_label,
		.names = source__names,
		.run_delay = source__run_delay,
		.started_as = source__started_as,
		.facts = source__facts,
		.k8s_names = source__k8s_names,
	};
	return 0;
fail:
	fprintf(stderr, "loopwatch: %s\n", err);
	return status;
}

static void run__close(struct run *r)
{
	/* first: every BPF close below is then a reference drop (collector.c) */
	if (r->c)
		collector__hand_off();
	sinks__close(r->sinks);
	stuck_watch__free(r->events.stuck);
	decoder__free(r->decoder);
	tracker__free(r->tracker);
	probes__free(r->probes);
	collector__destroy(r->c);
	symbols__free(r->syms);
	runtimes__free(r->rts);
	procs__free(r->procs);
	model__free(r->model);
}

/* ------------------------------------------------------------------ */
/* the main loop */

/*
 * The processes given with -p, set up whether they run a loop or not: their
 * probed calls and stacks are reported (lag needs a loop).
 */
static void run__track_pids(struct run *r)
{
	for (int i = 0; i < r->opts.npids; i++)
		tracker__new_loop(r->tracker, (__u32)r->opts.pids[i]);
	tracker__settle(r->tracker);
}

/* the filters, in userspace: --comm names, or (with neither filter) --exclude-comm's */
static bool run__comm_wanted(const char *comm, void *arg)
{
	const struct options *o = arg;

	/* cgroups are the kernel's to check: their loops are set up at their first wait */
	if (o->ncgroups)
		return false;
	if (o->ncomms) {
		for (int i = 0; i < o->ncomms; i++) {
			if (!strncmp(comm, o->comms[i], LW_COMM_LEN))
				return true;
		}
		return false;
	}
	for (int i = 0; i < o->nexcludes; i++) {
		if (!strncmp(comm, o->excludes[i], LW_COMM_LEN))
			return false;
	}
	return true;
}

/*
 * Without -p: the loops already waiting as loopwatch starts, set up before it
 * says "tracing" -- a process is otherwise set up at its first wait seen, and
 * its first stalls would lack its Python/JS frames and unwind tables. At
 * most RUN_PRESET processes and RUN_PRESET_S seconds (a host of many big
 * runtimes), the newest first: past them, at their first wait as before.
 */
#define RUN_PRESET 64
#define RUN_PRESET_S 2.0

static void run__track_waiting(struct run *r)
{
	double start = clock__mono();
	int pids[RUN_PRESET];
	size_t n;

	if (r->opts.npids)
		return;
	n = procs__waiting(pids, RUN_PRESET, run__comm_wanted, &r->opts);
	for (size_t i = 0; i < n && clock__mono() - start < RUN_PRESET_S; i++) {
		if (pids[i] == getpid())
			continue;
		tracker__new_loop(r->tracker, (__u32)pids[i]);
		tracker__settle(r->tracker);
	}
}

/* Every process with a loop thread, set up (again, if its NEW_LOOP event was lost). */
static void run__rescan(struct run *r)
{
	const struct model *m = r->model;

	run__track_pids(r);
	for (size_t i = 0; i < m->nthreads; i++) {
		if (!m->threads[i]->exited)
			tracker__new_loop(r->tracker, m->threads[i]->pid);
	}
	tracker__rescan(r->tracker);
	tracker__settle(r->tracker);
}

/* Kernel events until the deadline, a quit key or a signal; -errno on a poll error. */
static int run__wait(struct run *r, double deadline)
{
	struct pollfd fds[1 + SINKS_MAX_POLLFDS];
	double left = deadline - clock__mono();
	int timeout_ms = left > 0 ? (int)(left * 1000) + 1 : 0;
	bool interrupted;
	int n, ret;

	if (timeout_ms > EVENTS_POLL_S * 1000)
		timeout_ms = EVENTS_POLL_S * 1000;
	fds[0] = (struct pollfd){ .fd = collector__fd(r->c), .events = POLLIN };
	n = sinks__pollfds(r->sinks, fds + 1, SINKS_MAX_POLLFDS);
	ret = poll(fds, (nfds_t)(n + 1), timeout_ms);
	interrupted = ret < 0;
	/* a debugger attaching can leak the kernel's restart codes (512-516) here */
	if (interrupted && errno != EINTR && errno < 512)
		return -errno;
	/*
	 * Woken, timed out or interrupted (a Ctrl-C: the last events are read
	 * before the summary): most events come without a wakeup.
	 */
	ret = collector__consume(r->c);
	/* the new loops of that batch, each with its labels already read */
	tracker__settle(r->tracker);
	if (ret && ret != -EINTR)
		return ret;
	if (!interrupted && !sinks__ready(r->sinks, fds + 1, n))
		exiting = 1;
	return 0;
}

/* Hung loops: stuck events due now; when to look again (0: at the next interval). */
static double run__stuck(struct run *r, double next_interval)
{
	__u64 now_ns = clock__mono_ns(), due_ns = events__stuck(&r->events, now_ns);
	double due = (double)due_ns / 1e9, after_s = r->opts.stuck_after_s;

	if (after_s <= 0)
		return 0;
	/* a loop busy since just after this drain is seen in time by the next one */
	if (!due_ns || due > (double)now_ns / 1e9 + after_s)
		due = (double)now_ns / 1e9 + after_s;
	/* the interval's drain is about to look anyway */
	return due > next_interval - STUCK_COALESCE_S ? 0 : due;
}

/* SIGUSR1: the report files, now. */
static void run__snapshot(struct run *r)
{
	snapshot_wanted = 0;
	model__drain(r->model, &r->source, MODEL_LOOPS | MODEL_AGGREGATES);
	sinks__snapshot(r->sinks, r->model, clock__wall());
}

/* seconds after the start before a -p process with no loop thread is said to have none */
#define NO_LOOP_AFTER_S 2.0

/*
 * A -p process none of whose threads has entered a wait call: once, say so,
 * rather than "0 active loop threads" forever.
 */
static void pids__say_idle(struct run *r, double run_s)
{
	char comm[LW_COMM_LEN], thread[LW_COMM_LEN];

	if (r->opts.quiet || run_s < NO_LOOP_AFTER_S)
		return;
	for (int i = 0; i < r->opts.npids; i++) {
		__u32 pid = (__u32)r->opts.pids[i];
		bool looping = false;

		for (size_t k = 0; k < r->model->nthreads && !looping; k++)
			looping = r->model->threads[k]->pid == pid;
		if (looping || r->idle_said[i] || !tracker__names(r->tracker, pid, pid, comm, thread))
			continue;
		r->idle_said[i] = true;
		fprintf(stderr, "loopwatch: pid %u (%s) has no loop thread: none of its threads has "
			"entered epoll_wait, poll or select since loopwatch started (not an event "
			"loop, or stuck in one iteration since before)\n", pid, comm);
	}
}

/*
 * Loop threads the kernel side could not track, said once each way, even
 * with --quiet: a loop it cannot see is a loop it reports as fine.
 */
static void loops__say_untracked(struct run *r)
{
	const struct model *m = r->model;

	if (m->loops_refused && !r->refused_said) {
		r->refused_said = true;
		fprintf(stderr, "loopwatch: error: %llu loop thread(s) not tracked: the kernel "
			"refused to create their loop record (out of kernel memory, or a limit of "
			"this kernel's BPF task storage); counted in "
			"loopwatch_loop_records_refused_total\n",
			(unsigned long long)m->loops_refused);
	}
	if (m->loops_full && !r->full_said) {
		r->full_said = true;
		fprintf(stderr, "loopwatch: error: %llu loop thread(s) not tracked: %d loop "
			"records are alive, the most loopwatch keeps; counted in "
			"loopwatch_loop_map_full_total\n",
			(unsigned long long)m->loops_full, LW_MAX_LOOPS);
	}
}

static int run__loop(struct run *r)
{
	const struct options *opts = &r->opts;
	double start = clock__mono(), last = start, next = start + opts->interval_s;
	double end = opts->duration_s > 0 ? start + opts->duration_s : 0, next_rescan = 0;
	double next_stuck = 0;
	char err[256];
	int ret;

	if (sinks__start(r->sinks, r->model, start, err, sizeof(err))) {
		fprintf(stderr, "loopwatch: %s\n", err);
		return 1;
	}
	while (!exiting) {
		double now, due, deadline = end && end < next ? end : next;
		bool stop, drained = false;

		due = sinks__due(r->sinks);
		if (due > 0 && due < deadline)
			deadline = due;
		if (next_stuck > 0 && next_stuck < deadline)
			deadline = next_stuck;
		ret = run__wait(r, deadline);
		if (ret) {
			fprintf(stderr, "loopwatch: waiting for kernel events: %s\n", strerror(-ret));
			return 1;
		}
		now = clock__mono();
		stop = exiting || (end && now >= end) || pids__all_gone(opts);
		/* what the kernel submitted since the wait's read, before the last lines */
		if (stop)
			collector__consume(r->c);
		if (now >= next || stop) {
			model__drain(r->model, &r->source,
				     MODEL_LOOPS | sinks__interval_needs(r->sinks));
			model__end_interval(r->model, now - last, now - start);
			sinks__interval(r->sinks, r->model, clock__wall());
			pids__say_idle(r, now - start);
			loops__say_untracked(r);
			last = now;
			while (next <= now)
				next += opts->interval_s;
			drained = true;
			next_stuck = run__stuck(r, next);
			if (now >= next_rescan) {
				run__rescan(r);
				next_rescan = now + PROBE_RESCAN_S;
			}
		}
		if (stop)
			break;
		if (!drained && next_stuck > 0 && now >= next_stuck) {
			model__drain(r->model, &r->source, MODEL_LOOPS);
			drained = true;
			next_stuck = run__stuck(r, next);
		}
		if (snapshot_wanted)
			run__snapshot(r);
		due = sinks__due(r->sinks);
		if (due > 0 && now >= due) {
			model__drain(r->model, &r->source,
				     (drained ? 0 : MODEL_LOOPS) | MODEL_AGGREGATES);
			sinks__flush(r->sinks, r->model, now);
		}
	}
	model__drain(r->model, &r->source, MODEL_AGGREGATES);
	/* debug output: the kernel side's own accounting, which no sink line shows whole */
	if (opts->verbose)
		fprintf(stderr, "loopwatch: kernel counters: %llu events dropped, %llu loop threads "
			"not tracked (table full), %llu loop records refused, %llu switch-ins "
			"missed, %llu preemptions in busy periods, %llu stack walks\n",
			(unsigned long long)r->model->events_dropped,
			(unsigned long long)r->model->loops_full,
			(unsigned long long)r->model->loops_refused,
			(unsigned long long)r->model->switch_ins_missed,
			(unsigned long long)r->model->kcounters[LW_CTR_PREEMPTIONS],
			(unsigned long long)r->model->kcounters[LW_CTR_STACK_WALKS]);
	return sinks__summary(r->sinks, r->model, clock__wall()) ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct run r = {};
	int status;

	options__parse(&r.opts, argc, argv);
	culprit__innermost(r.opts.innermost_culprits);
	if (r.opts.list_probes) {
		probes__list(stdout);
		return 0;
	}
	preflight(&r.opts);
	status = run__open(&r);
	if (!status) {
		run__track_pids(&r);
		run__track_waiting(&r);
		signal(SIGINT, signal__handle);
		signal(SIGTERM, signal__handle);
		signal(SIGUSR1, signal__handle);
		/* what this kernel lacks, and its choice of hooks (docs/kernels.md) */
		if (!r.opts.quiet) {
			fprintf(stderr, "%s", collector__fallbacks(r.c));
			fprintf(stderr, "loopwatch: tracing event loops%s (hooks: %s); Ctrl-C to stop\n",
				r.opts.npids ? " of the given pids" : "", collector__hooks(r.c));
		}
		status = run__loop(&r);
	}
	run__close(&r);
	return status;
}
