// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The diagnosis: a Markdown report per process, written at exit and on
 * SIGUSR1 (--report FILE). Lag against the target (--threshold), how busy
 * the loop is, the culprits ranked by their share of stall time with one
 * line of advice each, the blocking calls by syscall and file or peer, the
 * share of waiting for a CPU, the probed calls and the hung loops seen.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "lib/hist.h"
#include "sinks/advice.h"
#include "sinks/outfile.h"
#include "sinks/rows.h"
#include "sinks/sink.h"

#define DIAG_CULPRITS 10
#define DIAG_PATHS 256		/* (process, syscall, file) kept from blocking calls */
#define DIAG_STUCK 64		/* processes whose hung loops are remembered */
#define DIAG_LIMITS 64		/* processes whose stalls named another party */
#define DIAG_PARTIES 4		/* wakers, CPU holders kept per process */
/* a cause under this share of stall time gets no advice line */
#define DIAG_MIN_SHARE 0.02

struct diag_path {
	__u32 pid;
	char syscall[REPORT_NAME_LEN];
	char path[256];
	__u64 count;
	__u64 ns;
};

struct diag_stuck {
	__u32 pid;
	__u64 reports;		/* first reports: hung iterations */
	__u64 longest_ns;
	char top[256];
	char syscall[REPORT_NAME_LEN];
	/* the longest one: which iteration, whether it ended, its time by part */
	__u32 tid;
	double start_ts;
	bool ended;
	__u64 parts_ns[3];	/* by enum stall_cause: so far, or at its end */
};

struct diagnosis {
	struct outfile file;
	double threshold_ms;
	struct diag_path paths[DIAG_PATHS];
	size_t npaths;
	struct diag_stuck stuck[DIAG_STUCK];
	size_t nstuck;
	/*
	 * The other parties of each process's stalls: the quota the latest
	 * throttled one named; who woke it and who had its CPU, summed.
	 */
	struct {
		__u32 pid;
		struct cpu_limit limit;
		int nwakers, nholders, ngil;
		struct neighbour_report wakers[DIAG_PARTIES];
		struct neighbour_report holders[DIAG_PARTIES];
		struct neighbour_report gil[DIAG_PARTIES];	/* held the GIL it waited for */
	} limits[DIAG_LIMITS];
	size_t nlimits;
};

static bool diagnosis__wanted(const struct sink_config *cfg)
{
	return cfg->report != NULL;
}

static void diagnosis__free(struct diagnosis *d)
{
	outfile__free(&d->file);
	free(d);
}

static int diagnosis__open(struct sink *s, const struct sink_config *cfg, char *err,
			   size_t errlen)
{
	struct diagnosis *d = calloc(1, sizeof(*d));

	if (!d) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (outfile__init(&d->file, cfg->report, "--report", 0, err, errlen)) {
		diagnosis__free(d);
		return -1;
	}
	d->threshold_ms = cfg->threshold_ms;
	s->priv = d;
	return 0;
}

/* Blocking calls by file or peer: what the kernel's per-syscall aggregates cannot say. */
static void diagnosis__block(struct sink *s, const struct block_report *r)
{
	struct diagnosis *d = s->priv;
	struct diag_path *p = NULL;

	for (size_t i = 0; i < d->npaths && !p; i++) {
		struct diag_path *q = &d->paths[i];

		if (q->pid == r->pid && !strcmp(q->syscall, r->syscall) && !strcmp(q->path, r->path))
			p = q;
	}
	if (!p && d->npaths < DIAG_PATHS) {
		p = &d->paths[d->npaths++];
		p->pid = r->pid;
		snprintf(p->syscall, sizeof(p->syscall), "%s", r->syscall);
		snprintf(p->path, sizeof(p->path), "%s", r->path);
	}
	if (!p)
		return;
	p->count++;
	p->ns += r->duration_ns;
}

static void diagnosis__stuck(struct sink *s, const struct stuck_report *k)
{
	struct diagnosis *d = s->priv;
	struct diag_stuck *st = NULL;

	for (size_t i = 0; i < d->nstuck && !st; i++) {
		if (d->stuck[i].pid == k->so_far.pid)
			st = &d->stuck[i];
	}
	if (!st && d->nstuck < DIAG_STUCK) {
		st = &d->stuck[d->nstuck++];
		st->pid = k->so_far.pid;
	}
	if (!st)
		return;
	if (k->nth == 1)
		st->reports++;
	if (k->so_far.duration_ns >= st->longest_ns) {
		st->longest_ns = k->so_far.duration_ns;
		snprintf(st->top, sizeof(st->top), "%s", k->so_far.top);
		snprintf(st->syscall, sizeof(st->syscall), "%s", k->in_call ? k->call.syscall : "");
		st->tid = k->so_far.tid;
		st->start_ts = k->so_far.ts;
		st->ended = false;
		st->parts_ns[CAUSE_CPU] = k->so_far.oncpu_ns;
		st->parts_ns[CAUSE_BLOCKED] = k->so_far.blocked_ns + k->so_far.gil_ns;
		st->parts_ns[CAUSE_RUNQ] = k->so_far.runq_ns;
	}
}

/* The end of a hung iteration: it returned to its wait, with its final split. */
/* One party's time into a process's longest few; the least makes room. */
static void parties__add(struct neighbour_report *v, int *n, const struct neighbour_report *p)
{
	int i, min = 0;

	for (i = 0; i < *n; i++) {
		if (v[i].tid == p->tid) {
			v[i].ns += p->ns;
			return;
		}
		if (v[i].ns < v[min].ns)
			min = i;
	}
	if (*n < DIAG_PARTIES)
		v[(*n)++] = *p;
	else if (v[min].ns < p->ns)
		v[min] = *p;
}

static void diagnosis__limit(struct diagnosis *d, const struct stall_report *r)
{
	size_t i;

	if (!(r->throttled_ns && r->limit.known) && !r->nwakers && !r->nneighbours &&
	    !r->ngil_holders)
		return;
	for (i = 0; i < d->nlimits && d->limits[i].pid != r->pid; i++)
		;
	if (i == DIAG_LIMITS)
		return;
	if (i == d->nlimits) {
		memset(&d->limits[i], 0, sizeof(d->limits[i]));
		d->nlimits++;
	}
	d->limits[i].pid = r->pid;
	if (r->throttled_ns && r->limit.known)
		d->limits[i].limit = r->limit;
	for (int k = 0; k < r->nwakers; k++)
		parties__add(d->limits[i].wakers, &d->limits[i].nwakers, &r->wakers[k]);
	for (int k = 0; k < r->nneighbours; k++)
		parties__add(d->limits[i].holders, &d->limits[i].nholders, &r->neighbours[k]);
	for (int k = 0; k < r->ngil_holders; k++) {
		const struct gil_holder_report *h = &r->gil_holders[k];
		struct neighbour_report p = { .tid = h->tid, .pid = r->pid, .ns = h->ns };

		memcpy(p.comm, h->comm, sizeof(p.comm));
		if (h->stack >= 0 && h->stack < r->nstacks)
			stack_report__top(&r->stacks[h->stack], p.top, sizeof(p.top));
		parties__add(d->limits[i].gil, &d->limits[i].ngil, &p);
	}
}

static void diagnosis__stall(struct sink *s, const struct stall_report *r)
{
	struct diagnosis *d = s->priv;

	diagnosis__limit(d, r);
	for (size_t i = 0; i < d->nstuck; i++) {
		struct diag_stuck *st = &d->stuck[i];
		double dt = r->ts - st->start_ts;

		if (st->pid != r->pid || st->tid != r->tid || dt < -1e-3 || dt > 1e-3)
			continue;
		st->ended = true;
		st->longest_ns = r->duration_ns;
		st->parts_ns[CAUSE_CPU] = r->oncpu_ns;
		st->parts_ns[CAUSE_BLOCKED] = r->blocked_ns + r->gil_ns;
		st->parts_ns[CAUSE_RUNQ] = r->runq_ns;
	}
}

/* Markdown table cells: a '|' or a backtick in a name would break the table. */
static void md__code(FILE *out, const char *s)
{
	fputc('`', out);
	for (; *s; s++)
		fputc(*s == '`' ? '\'' : *s == '|' ? '/' : *s, out);
	fputc('`', out);
}

static enum stall_cause times__cause(const struct func_times *t)
{
	return stall_cause__of(t->self_ns[CAUSE_CPU], t->self_ns[CAUSE_BLOCKED],
			       t->self_ns[CAUSE_RUNQ]);
}

static const char *path__base(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

static double pct(__u64 part, __u64 whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0;
}

/*
 * Arrival-weighted lag first: what an event arriving at a random moment
 * waits, where a long iteration counts in proportion to its length; then the
 * iterations' own percentiles, each counted once however long.
 */
static void lag__print(FILE *out, const struct diagnosis *d, const struct model *m, __u32 pid,
		       __u64 *p99_ns)
{
	double over = 0;
	char name[64];

	*p99_ns = 0;
	fprintf(out, "| loop thread | iterations | utilization | arrival lag p50 | p90 | p99 | max "
		"| time in iterations over %.0f ms | per iteration p50 | p90 | p99 | p99.9 "
		"| iterations over %.0f ms |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: "
		"| ---: | ---: | ---: | ---: | ---: | ---: |\n", d->threshold_ms, d->threshold_ms);
	for (size_t i = 0; i < m->nthreads; i++) {
		const struct loop_thread *t = m->threads[i];
		struct loop_view v;

		if (t->pid != pid || !t->snap.iterations)
			continue;
		loop_thread__summary(t, &v);
		if (v.arrival.p99_ns > *p99_ns) {
			*p99_ns = v.arrival.p99_ns;
			over = v.arrival.over_share;
		}
		snprintf(name, sizeof(name), "%s[%u]", t->thread, t->tid);
		fputs("| ", out);
		md__code(out, name);
		fprintf(out, " | %llu | %.1f %% | %.2f ms | %.2f ms | %.2f ms | %.2f ms | %.2f %% "
			"| %.2f ms | %.2f ms | %.2f ms | %.2f ms | %llu (%.1f %%) |\n",
			(unsigned long long)v.iterations, 100.0 * loop_view__utilization(&v),
			ms(v.arrival.p50_ns), ms(v.arrival.p90_ns), ms(v.arrival.p99_ns),
			ms(v.lag.max_ns), 100.0 * v.arrival.over_share, ms(v.lag.p50_ns),
			ms(v.lag.p90_ns), ms(v.lag.p99_ns), ms(v.lag.p999_ns),
			(unsigned long long)t->snap.stalls, pct(t->snap.stalls, v.iterations));
	}
	fprintf(out, "\nArrival lag: what an event arriving at a random moment waits for the "
		"iteration under way (0 while the loop waits); a long iteration is met in "
		"proportion to its length. Target: under %.0f ms (`--threshold`). ",
		d->threshold_ms);
	if (*p99_ns > d->threshold_ms * 1e6)
		fprintf(out, "**The p99 arrival lag, %.1f ms, is %.1f× the target**: 1 event in 100 "
			"waits that long before the loop looks at it; the loop spends %.1f %% of "
			"its time in iterations over %.0f ms.\n\n", ms(*p99_ns),
			ms(*p99_ns) / d->threshold_ms, 100.0 * over, d->threshold_ms);
	else
		fprintf(out, "The p99 arrival lag, %.2f ms, is within it.\n\n", ms(*p99_ns));
}

static void culprits__print(FILE *out, const struct model *m, const struct attr_proc *p,
			    __u64 p99_ns)
{
	__u64 stall_ns = p->stall_ns[0] + p->stall_ns[1] + p->stall_ns[2];
	size_t n, tail_stalls = 0;
	const struct func_stat **v = attribution__sorted(m->attr, false, FUNC_SORT_SELF, p->pid, &n);
	char name[FUNC_NAME_LEN + FUNC_WHERE_LEN + 16];

	fprintf(out, "### Where the stall time went\n\n%llu stalls, %.1f ms: on CPU %.0f %%, "
		"blocked %.0f %%, waiting for a CPU %.0f %%. Each stall's time is shared among "
		"all its stacks (CPU samples, blocking calls, run-queue waits) and charged to the "
		"function of the user's code on each.\n\n", (unsigned long long)p->stalls,
		ms(stall_ns), pct(p->stall_ns[CAUSE_CPU], stall_ns),
		pct(p->stall_ns[CAUSE_BLOCKED], stall_ns), pct(p->stall_ns[CAUSE_RUNQ], stall_ns));
	for (size_t i = 0; v && i < n && i < DIAG_CULPRITS; i++) {
		const struct func_stat *f = v[i];
		__u64 self = func_times__self(&f->run);
		enum stall_cause cause = times__cause(&f->run);
		double tail = attribution__tail_share(m->attr, f, p99_ns, &tail_stalls);

		if ((double)self < DIAG_MIN_SHARE * (double)stall_ns)
			break;
		func_stat__name(f, name, sizeof(name));
		fprintf(out, "%zu. ", i + 1);
		if (f->via[0] && cause != CAUSE_RUNQ) {
			md__code(out, f->via);
			fputs(" in ", out);
		}
		md__code(out, name);
		fprintf(out, " — %s: **%.1f %% of stall time** (%.1f ms), %llu stalls", stall_cause__name(cause),
			pct(self, stall_ns), ms(self), (unsigned long long)f->stalls);
		if (tail_stalls)
			fprintf(out, ", %.0f %% of the time of the %zu stalls at or over the p99",
				100.0 * tail, tail_stalls);
		fprintf(out, ".\n   Advice: %s\n", advice__culprit(f->via, cause));
	}
	if (!n)
		fputs("No stall: nothing to attribute.\n", out);
	fputc('\n', out);
	free(v);
}

static void blocking__print(FILE *out, const struct diagnosis *d, const struct model *m,
			    __u32 pid)
{
	bool any = false;

	for (size_t i = 0; i < m->nsyscalls; i++) {
		const struct syscall_agg *a = &m->syscalls[i];

		if (a->pid != pid)
			continue;
		if (!any)
			fputs("### Blocking calls\n\nEvery syscall a loop thread slept in while "
			      "handling events (kernel totals):\n\n| syscall | calls | blocked | p99 "
			      "| max |\n| --- | ---: | ---: | ---: | ---: |\n", out);
		any = true;
		fputs("| ", out);
		md__code(out, a->name);
		fprintf(out, " | %llu | %.1f ms | %.2f ms | %.2f ms |\n", (unsigned long long)a->count,
			ms(a->total_ns), ms(a->lat.p99_ns), ms(a->lat.max_ns));
	}
	if (!any)
		return;
	any = false;
	for (size_t i = 0; i < d->npaths; i++) {
		const struct diag_path *p = &d->paths[i];

		if (p->pid != pid)
			continue;
		if (!any)
			fprintf(out, "\nBy file or peer (calls over `--block-threshold`):\n\n| syscall "
				"| file or peer | calls | total |\n| --- | --- | ---: | ---: |\n");
		any = true;
		fputs("| ", out);
		md__code(out, p->syscall);
		fputs(" | ", out);
		if (p->path[0])
			md__code(out, p->path);
		else
			fputs("(no file)", out);
		fprintf(out, " | %llu | %.1f ms |\n", (unsigned long long)p->count, ms(p->ns));
	}
	fputc('\n', out);
}

/*
 * Who woke the loop from its sleeps, who had its CPU while it waited, who
 * held the GIL it waited for, most first.
 */
static void parties__print(FILE *out, const struct diagnosis *d, __u32 pid)
{
	const char *title[3] = { "Woken by (the sleeps each ended, in stalls)",
				 "CPU held by (while it waited for a CPU, in stalls)",
				 "GIL held by (while it waited for the GIL, in stalls)" };

	for (size_t i = 0; i < d->nlimits; i++) {
		if (d->limits[i].pid != pid)
			continue;
		for (int kind = 0; kind < 3; kind++) {
			const struct neighbour_report *from[3] = { d->limits[i].wakers,
								   d->limits[i].holders,
								   d->limits[i].gil };
			int counts[3] = { d->limits[i].nwakers, d->limits[i].nholders,
					  d->limits[i].ngil };
			struct neighbour_report v[DIAG_PARTIES];
			int n = counts[kind];

			memcpy(v, from[kind], sizeof(v[0]) * (size_t)n);
			if (!n)
				continue;
			fprintf(out, "%s: ", title[kind]);
			for (int a = 0; a < n; a++) {
				struct neighbour_report t;
				int best = a;

				for (int b = a + 1; b < n; b++)
					if (v[b].ns > v[best].ns)
						best = b;
				t = v[a];
				v[a] = v[best];
				v[best] = t;
				fputs(a ? ", " : "", out);
				md__code(out, v[a].comm);
				if (v[a].tid)
					fprintf(out, " (thread %u of process %u)", v[a].tid, v[a].pid);
				if (v[a].top[0]) {
					fputs(" in ", out);
					md__code(out, v[a].top);
				}
				fprintf(out, " %.1f ms", ms(v[a].ns));
			}
			fputs(".\n\n", out);
		}
	}
}

static const struct cpu_limit *diagnosis__limit_of(const struct diagnosis *d, __u32 pid)
{
	for (size_t i = 0; i < d->nlimits; i++)
		if (d->limits[i].pid == pid)
			return &d->limits[i].limit;
	return NULL;
}

/* Of the waits for a CPU, the cgroup's quota's: the limit, named. */
static void throttled__print(FILE *out, const struct diagnosis *d, __u32 pid, __u64 runq,
			     __u64 throttled)
{
	const struct cpu_limit *l = diagnosis__limit_of(d, pid);

	if (!throttled || !l || !l->known)
		l = NULL;
	if (!throttled)
		return;
	fprintf(out, "Of that wait, %.1f %% (%.1f ms) was spent with the loop's cgroup throttled "
		"by its CPU quota", pct(throttled, runq), ms(throttled));
	if (l) {
		fputs(": cgroup ", out);
		md__code(out, l->cgroup);
		fprintf(out, " may use %g ms of CPU every %g ms", (double)l->quota_us / 1e3,
			(double)l->period_us / 1e3);
		if (l->stat.nr_periods)
			fprintf(out, " and was throttled in %llu of its %llu periods",
				(unsigned long long)l->stat.nr_throttled,
				(unsigned long long)l->stat.nr_periods);
	}
	fprintf(out, ". %s\n\n", advice__throttled(pct(throttled, runq) >= 50.0));
}

static void runq__print(FILE *out, const struct diagnosis *d, const struct model *m,
			const struct attr_proc *p)
{
	__u64 stall_ns = p->stall_ns[0] + p->stall_ns[1] + p->stall_ns[2], busy = 0, runq = 0;
	__u64 throttled = 0;
	double share = pct(p->stall_ns[CAUSE_RUNQ], stall_ns);

	for (size_t i = 0; i < m->nthreads; i++) {
		if (m->threads[i]->pid == p->pid) {
			busy += m->threads[i]->snap.busy_ns;
			runq += m->threads[i]->snap.runq_ns;
			throttled += m->threads[i]->snap.throttled_ns;
		}
	}
	/* a quota that took most of the wait is the advice: the host is not to blame */
	fprintf(out, "### Waiting for a CPU\n\n%.1f %% of the stall time and %.1f %% of all busy "
		"time was spent runnable, waiting for a CPU. %s\n\n", share, pct(runq, busy),
		2 * throttled >= runq && throttled ? "" : advice__runq(p->stall_ns));
	throttled__print(out, d, p->pid, runq, throttled);
}

static void probes__print(FILE *out, const struct model *m, __u32 pid)
{
	bool any = false;

	for (size_t i = 0; i < m->nprobes; i++) {
		const struct probe_agg *a = &m->probes[i];

		if (a->pid != pid || !a->calls)
			continue;
		if (!any)
			fputs("### Probed calls\n\n| function | calls | total | share of loop busy "
			      "time | p99 | max |\n| --- | ---: | ---: | ---: | ---: | ---: |\n", out);
		any = true;
		fputs("| ", out);
		md__code(out, a->label);
		fprintf(out, " | %llu | %.1f ms | %.1f %% | %.2f ms | %.2f ms |\n",
			(unsigned long long)a->calls, ms(a->total_ns), 100.0 * a->busy_share,
			ms(a->lat.p99_ns), ms(a->lat.max_ns));
	}
	if (any)
		fputc('\n', out);
}

static void stuck__print(FILE *out, const struct diagnosis *d, __u32 pid)
{
	for (size_t i = 0; i < d->nstuck; i++) {
		const struct diag_stuck *st = &d->stuck[i];

		if (st->pid != pid)
			continue;
		__u64 total = st->parts_ns[0] + st->parts_ns[1] + st->parts_ns[2];
		enum stall_cause cause = stall_cause__of(st->parts_ns[CAUSE_CPU],
							 st->parts_ns[CAUSE_BLOCKED],
							 st->parts_ns[CAUSE_RUNQ]);

		fprintf(out, "### Hung loops\n\n%llu iteration(s) lasted past `--stuck-after`; the "
			"longest %s %.1f s (on CPU %.0f %%, blocked %.0f %%, waiting for a CPU "
			"%.0f %%), in ", (unsigned long long)st->reports,
			st->ended ? "ran" : "had run", (double)st->longest_ns / 1e9,
			pct(st->parts_ns[CAUSE_CPU], total), pct(st->parts_ns[CAUSE_BLOCKED], total),
			pct(st->parts_ns[CAUSE_RUNQ], total));
		md__code(out, st->top);
		if (st->syscall[0]) {
			fputs(st->ended ? ", when last seen asleep in " : ", asleep in ", out);
			md__code(out, st->syscall);
		}
		fprintf(out, ". %s\n\n", advice__hung(st->ended, cause));
	}
}

static void process__print(FILE *out, const struct diagnosis *d, const struct model *m,
			   const struct attr_proc *p)
{
	const char *exe = "", *started = "";
	__u64 busy = 0, idle = 0, p99_ns;

	for (size_t i = 0; i < m->nthreads; i++) {
		if (m->threads[i]->pid == p->pid) {
			busy += m->threads[i]->snap.busy_ns;
			idle += m->threads[i]->snap.idle_ns;
			if (m->threads[i]->exe[0])
				exe = m->threads[i]->exe;
			if (m->threads[i]->started_as[0])
				started = m->threads[i]->started_as;
		}
	}
	fprintf(out, "## %s (pid %u)\n\n", p->comm, p->pid);
	/* as the user started it first, then the file a symlink led to */
	if (started[0] && exe[0] && strcmp(path__base(started), path__base(exe))) {
		fputs("Started as ", out);
		md__code(out, started);
		fputs(", running ", out);
	}
	if (exe[0]) {
		md__code(out, exe);
		fputs("\n\n", out);
	}
	lag__print(out, d, m, p->pid, &p99_ns);
	fprintf(out, "Utilization: the loop was busy %.1f %% of the time (%.1f ms of %.1f ms).\n\n",
		pct(busy, busy + idle), ms(busy), ms(busy + idle));
	culprits__print(out, m, p, p99_ns);
	blocking__print(out, d, m, p->pid);
	runq__print(out, d, m, p);
	parties__print(out, d, p->pid);
	probes__print(out, m, p->pid);
	stuck__print(out, d, p->pid);
}

static int diagnosis__write(struct diagnosis *d, const struct model *m, double ts, bool final)
{
	FILE *out = outfile__begin(&d->file);
	struct attr_proc *procs;
	size_t n;
	char when[64];
	time_t secs = (time_t)ts;
	struct tm tm;

	if (!out)
		return -1;
	localtime_r(&secs, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	fprintf(out, "# loopwatch diagnosis\n\n%s, %s after %.1f s of tracing. Stall: an "
		"iteration of %.0f ms or more (`--threshold`); the attribution below covers "
		"stall time, the only time with stacks.\n\n", when,
		final ? "at exit" : "on SIGUSR1", m->run_s, d->threshold_ms);
	/* a report that looks complete but is not would send the reader the wrong way */
	if (m->events_dropped)
		fprintf(out, "**Events lost: %llu** stalls, blocking and probed calls never reached "
			"loopwatch (the kernel's ring buffer was full); the numbers below miss "
			"them.\n\n", (unsigned long long)m->events_dropped);
	procs = attribution__procs(m->attr, &n);
	for (size_t i = 0; procs && i < n; i++)
		process__print(out, d, m, &procs[i]);
	if (!n)
		fputs("No loop thread stalled.\n", out);
	free(procs);
	return outfile__commit(&d->file, out);
}

static void diagnosis__snapshot(struct sink *s, const struct model *m, double ts)
{
	diagnosis__write(s->priv, m, ts, false);
}

static int diagnosis__summary(struct sink *s, const struct model *m, double ts)
{
	struct diagnosis *d = s->priv;

	/* a snapshot that failed fails the run too, though this last write may work */
	return diagnosis__write(d, m, ts, true) || outfile__status(&d->file) ? 1 : 0;
}

static void diagnosis__close(struct sink *s)
{
	if (s->priv)
		diagnosis__free(s->priv);
}

const struct sink_ops diagnosis_sink = {
	.name = "diagnosis report",
	.wanted = diagnosis__wanted,
	.open = diagnosis__open,
	.block = diagnosis__block,
	.stall = diagnosis__stall,
	.stuck = diagnosis__stuck,
	.snapshot = diagnosis__snapshot,
	.summary = diagnosis__summary,
	.close = diagnosis__close,
};
