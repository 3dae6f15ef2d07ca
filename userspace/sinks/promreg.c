// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The sink keeps its own book of series so that counters never go back:
 * every source it has seen (a loop thread, or the kernel's aggregate of one
 * syscall or one probe in one process) contributes (its counters now - a
 * base) to the series of its labels; when the source leaves the model, or
 * its labels change, or its kernel record restarts from zero, what it
 * contributed so far moves to the series' retired part and stays there.
 */
#include <stdlib.h>
#include <string.h>
#include "lib/arrival.h"
#include "lib/cgroup.h"
#include "lib/text.h"
#include "sinks/promreg.h"
#include "sinks/sink.h"
#include "version.h"

#define PROM_HASH 4096
#define PROM_LABELS_LEN 2048
/* a thread inside one iteration this long is a loop, however few it has made: a hung one */
#define PROM_ADMIT_BUSY_NS 1000000000ULL

/* the le bounds of loopwatch_loop_iteration_seconds, besides +Inf */
static const struct {
	const char *le;
	__u64 ns;
} prom_buckets[] = {
	{ "0.001", 1000000ULL },
	{ "0.005", 5000000ULL },
	{ "0.01", 10000000ULL },
	{ "0.025", 25000000ULL },
	{ "0.05", 50000000ULL },
	{ "0.1", 100000000ULL },
	{ "0.25", 250000000ULL },
	{ "0.5", 500000000ULL },
	{ "1", 1000000000ULL },
	{ "2.5", 2500000000ULL },
};
#define PROM_NBUCKETS (sizeof(prom_buckets) / sizeof(prom_buckets[0]))

/* Loop, syscall and probe series: different labels, different families. */
enum prom_kind { PROM_LOOP, PROM_SYSCALL, PROM_PROBE };

/* Everything a series exports, all monotonic. */
struct prom_counts {
	__u64 le[PROM_NBUCKETS];	/* cumulative */
	__u64 count;			/* the +Inf bucket and _count */
	__u64 busy_ns;			/* probe series: of total_ns, in loop busy time */
	__u64 idle_ns;
	__u64 blocked_ns;		/* loop series: of busy_ns, asleep */
	__u64 runq_ns;			/* loop series: of busy_ns, waiting for a CPU */
	__u64 iterations;
	__u64 stalls;
	__u64 total_ns;			/* syscall: asleep in it; probe: inside calls */
	__u64 calls;			/* syscall series: invocations that slept */
	/*
	 * Loop series, arrival-weighted lag as a histogram of time: of span_ns
	 * (every moment watched, busy or waiting), the ns at which an arriving
	 * event would have waited at most le ("0" first, then prom_buckets).
	 */
	__u64 arrival_le[PROM_NBUCKETS + 1];
	__u64 span_ns;
	__u64 arrival_us2;		/* the integral of the wait over time, us^2 */
	__u64 stall_busy_ns;		/* busy time in iterations over the stall threshold */
	__u64 throttled_ns;		/* loop series: of runq_ns, its CPU quota ran out */
	__u64 gil_ns;			/* loop series: asleep waiting for the GIL */
};

struct prom_series {
	enum prom_kind kind;
	char *labels;			/* rendered and escaped: comm="..",exe="..",... */
	struct prom_counts retired;	/* left behind by sources no longer counted live */
	struct prom_counts total;	/* retired + live contributions, at the last fold */
	int live;			/* attached threads that have not exited */
	__u64 busy_now_ns;		/* the oldest current iteration of its live threads */
	double dead_since;		/* when live fell to 0; < 0 while alive */
	bool doomed;			/* goes at the end of this fold */
	/*
	 * --prom-native, loop series: the kernel's buckets (LW_HIST_BUCKETS),
	 * counted like total; promproto.c maps them to native ones (lib/hist.h)
	 */
	__u64 *native;
	struct prom_series *hash_next;
};

struct prom_source {
	enum prom_kind kind;
	__u32 id;		/* a loop thread's tid, an aggregate's pid */
	__u64 start_ns;		/* a loop thread's start: tids are reused */
	char key[REPORT_LABEL_LEN];	/* an aggregate's syscall or probe */
	/*
	 * A syscall aggregate's process name: the kernel keys them by pid alone,
	 * so another name under the same pid is another process.
	 */
	char comm[LW_COMM_LEN];
	struct prom_series *series;
	struct prom_counts base;
	struct prom_counts last;
	bool exited;
	bool seen;
	bool dropped;		/* its series went after the staleness window */
	bool capped;		/* found no room under the series cap (counted once) */
	__u64 busy_now_ns;	/* a loop thread's current iteration, 0 while it waits */
	__u64 *native_last;	/* --prom-native: its histogram as last folded (LW_HIST_BUCKETS) */
	struct prom_source *hash_next;
};

struct prom_registry {
	struct prom_options opts;
	double last_write_s;
	__u64 self[PROM_SELF_N];
	struct prom_source *sources[PROM_HASH];
	struct prom_series *series[PROM_HASH];
	size_t nseries;
	size_t nlive_threads;
	int refs;		/* prom_registry__shared's users */
};

/*
 * Time at which an arriving event waits at most le: span - sum max(0, d - le),
 * the sum by the chord inside le's bucket (exact at its bounds, never below
 * the truth) with each bucket's own bounds, so that what an iteration adds
 * is at most its length: every bucket only grows.
 */
static void counts__arrival(struct prom_counts *c, const struct loop_thread *t)
{
	const struct lw_hist *h = &t->snap.busy_hist;
	const struct lw_hist_sums *s = &t->snap.busy_sums;
	double span = (double)t->span_ns, sq = 0;

	for (size_t i = 0; i <= PROM_NBUCKETS; i++) {
		double excess = arrival__excess_ns(h, s, i ? prom_buckets[i - 1].ns : 0, 0, true);

		c->arrival_le[i] = span > excess ? (__u64)(span - excess) : 0;
	}
	c->span_ns = t->span_ns;
	/* the wait falls from d to 0 over an iteration: d^2 / 2 each, a bucket at its mean */
	for (unsigned int b = 0; b < LW_HIST_BUCKETS; b++) {
		if (h->counts[b])
			sq += (double)s->ns[b] / 1e3 * ((double)s->ns[b] / 1e3) /
			      (double)h->counts[b] / 2;
	}
	c->arrival_us2 = (__u64)sq;
	/* the kernel's exact sum of the iterations at or over the stall threshold */
	c->stall_busy_ns = t->snap.stall_busy_ns;
}

static void counts__from_thread(struct prom_counts *c, const struct loop_thread *t)
{
	const struct lw_hist *h = &t->snap.busy_hist;

	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < PROM_NBUCKETS; i++)
		c->le[i] = hist__count_le(h, prom_buckets[i].ns);
	c->count = hist__count(h);
	c->busy_ns = t->snap.busy_ns;
	c->idle_ns = t->snap.idle_ns;
	c->blocked_ns = t->snap.blocked_ns;
	c->runq_ns = t->snap.runq_ns;
	c->throttled_ns = t->snap.throttled_ns;
	c->gil_ns = t->snap.gil_ns;
	c->iterations = t->snap.iterations;
	c->stalls = t->snap.stalls;
	counts__arrival(c, t);
}

/* dst += a - b */
static void counts__add_diff(struct prom_counts *dst, const struct prom_counts *a,
			     const struct prom_counts *b)
{
	for (size_t i = 0; i < PROM_NBUCKETS; i++)
		dst->le[i] += a->le[i] - b->le[i];
	dst->count += a->count - b->count;
	dst->busy_ns += a->busy_ns - b->busy_ns;
	dst->idle_ns += a->idle_ns - b->idle_ns;
	dst->blocked_ns += a->blocked_ns - b->blocked_ns;
	dst->runq_ns += a->runq_ns - b->runq_ns;
	dst->throttled_ns += a->throttled_ns - b->throttled_ns;
	dst->gil_ns += a->gil_ns - b->gil_ns;
	dst->iterations += a->iterations - b->iterations;
	dst->stalls += a->stalls - b->stalls;
	dst->total_ns += a->total_ns - b->total_ns;
	dst->calls += a->calls - b->calls;
	/* estimates from sums: rounding may move them back a nanosecond, never a count */
	for (size_t i = 0; i <= PROM_NBUCKETS; i++)
		dst->arrival_le[i] += a->arrival_le[i] > b->arrival_le[i] ?
				      a->arrival_le[i] - b->arrival_le[i] : 0;
	dst->span_ns += a->span_ns - b->span_ns;
	dst->arrival_us2 += a->arrival_us2 > b->arrival_us2 ? a->arrival_us2 - b->arrival_us2 : 0;
	dst->stall_busy_ns += a->stall_busy_ns > b->stall_busy_ns ?
			      a->stall_busy_ns - b->stall_busy_ns : 0;
}

/*
 * true if any counter of a is below b's: (now, before) says the kernel
 * record started over, (before, now) that it moved on.
 */
static bool counts__any_below(const struct prom_counts *a, const struct prom_counts *b)
{
	for (size_t i = 0; i < PROM_NBUCKETS; i++) {
		if (a->le[i] < b->le[i])
			return true;
	}
	return a->count < b->count || a->busy_ns < b->busy_ns || a->idle_ns < b->idle_ns ||
	       a->blocked_ns < b->blocked_ns || a->runq_ns < b->runq_ns ||
	       a->throttled_ns < b->throttled_ns || a->gil_ns < b->gil_ns ||
	       a->iterations < b->iterations || a->stalls < b->stalls ||
	       a->total_ns < b->total_ns || a->calls < b->calls || a->span_ns < b->span_ns;
}

static unsigned int str__hash(const char *s)
{
	unsigned int h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h % PROM_HASH;
}

struct strbuf {
	char *buf;
	size_t len;
	size_t pos;
};

static void strbuf__put(struct strbuf *sb, const char *s, size_t n)
{
	/* truncation keeps the string terminated; a label past 2 KiB is garbage anyway */
	if (sb->pos + n >= sb->len)
		n = sb->pos < sb->len - 1 ? sb->len - 1 - sb->pos : 0;
	memcpy(sb->buf + sb->pos, s, n);
	sb->pos += n;
	sb->buf[sb->pos] = '\0';
}

/* name="value" with the exposition format's escapes; invalid UTF-8 becomes '?' */
static void strbuf__label(struct strbuf *sb, const char *name, const char *value)
{
	const unsigned char *s = (const unsigned char *)value;

	if (sb->pos)
		strbuf__put(sb, ",", 1);
	strbuf__put(sb, name, strlen(name));
	strbuf__put(sb, "=\"", 2);
	while (*s) {
		int n = utf8__seq_len(s);

		if (*s == '\\')
			strbuf__put(sb, "\\\\", 2);
		else if (*s == '"')
			strbuf__put(sb, "\\\"", 2);
		else if (*s == '\n')
			strbuf__put(sb, "\\n", 2);
		else if (!n)
			strbuf__put(sb, "?", 1);
		else
			strbuf__put(sb, (const char *)s, (size_t)n);
		s += n ? n : 1;
	}
	strbuf__put(sb, "\"", 1);
}

static void strbuf__label_u32(struct strbuf *sb, const char *name, __u32 value)
{
	char num[16];

	snprintf(num, sizeof(num), "%u", value);
	strbuf__label(sb, name, num);
}

/*
 * The service a process belongs to, by lib/cgroup.h's precedence: a
 * Kubernetes container is namespace/container when the kubelet's files name
 * it, else its pod's uid; another container its short id; a systemd unit its
 * name. Absent when nothing names one: an empty label is no label.
 */
static void strbuf__service(struct strbuf *sb, const struct cgroup_identity *id,
			    const struct k8s_names *k8s)
{
	char name[CGROUP_SERVICE_LEN];

	cgroup__service(id, k8s, name, sizeof(name));
	if (name[0])
		strbuf__label(sb, "service", name);
}

/*
 * The labels every family shares: both kinds of series join on them. k8s:
 * the pod's names, NULL when unknown.
 */
static void strbuf__process(struct strbuf *sb, const char *comm, const char *exe,
			    const char *cgroup, const struct cgroup_identity *id,
			    const struct k8s_names *k8s)
{
	strbuf__label(sb, "comm", comm);
	strbuf__label(sb, "exe", exe);
	strbuf__label(sb, "cgroup", cgroup);
	strbuf__service(sb, id, k8s);
	if (id->container_id[0])
		strbuf__label(sb, "container_id", id->container_id);
	if (id->pod_uid[0])
		strbuf__label(sb, "pod_uid", id->pod_uid);
	if (k8s && k8s->ns[0]) {
		strbuf__label(sb, "namespace", k8s->ns);
		strbuf__label(sb, "pod", k8s->pod);
		if (k8s->container[0])
			strbuf__label(sb, "container", k8s->container);
	}
}

static void labels__build(char *buf, size_t len, const struct loop_thread *t, bool per_pid)
{
	struct strbuf sb = { buf, len, 0 };

	buf[0] = '\0';
	strbuf__process(&sb, t->comm, t->exe, t->cgroup, &t->cg, &t->k8s);
	if (!per_pid)
		return;
	strbuf__label_u32(&sb, "pid", t->pid);
	strbuf__label_u32(&sb, "tid", t->tid);
}

/*
 * What the kernel counts per process rather than per thread (the time and
 * calls of one syscall, or of one probe), in the terms the sink folds.
 */
struct prom_agg {
	enum prom_kind kind;
	__u32 pid;
	const char *comm;
	const char *key;	/* the syscall's or the probe's name */
	struct prom_counts now;
};

/* t: a loop thread of the same process, for exe and cgroup; NULL when none is known */
static void labels__agg(char *buf, size_t len, const struct prom_agg *a,
			const struct loop_thread *t, bool per_pid)
{
	static const struct cgroup_identity none = { .kind = CGROUP_NONE };
	struct strbuf sb = { buf, len, 0 };

	buf[0] = '\0';
	strbuf__label(&sb, a->kind == PROM_PROBE ? "probe" : "syscall", a->key);
	strbuf__process(&sb, a->comm, t ? t->exe : "", t ? t->cgroup : "", t ? &t->cg : &none,
			t ? &t->k8s : NULL);
	if (per_pid)
		strbuf__label_u32(&sb, "pid", a->pid);
}

static struct prom_series *series__get(struct prom_registry *sp, enum prom_kind kind,
				       const char *labels)
{
	unsigned int h = str__hash(labels);
	struct prom_series *s;

	for (s = sp->series[h]; s; s = s->hash_next) {
		if (s->kind == kind && !strcmp(s->labels, labels))
			return s;
	}
	/* full: the source waits, uncounted, until stale series make room */
	if (sp->opts.max_series && sp->nseries >= sp->opts.max_series)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->kind = kind;
	s->labels = strdup(labels);
	if (!s->labels) {
		free(s);
		return NULL;
	}
	s->dead_since = -1;
	s->hash_next = sp->series[h];
	sp->series[h] = s;
	sp->nseries++;
	return s;
}

static struct prom_source *source__new(struct prom_registry *sp, unsigned int h,
				       enum prom_kind kind, __u32 id)
{
	struct prom_source *ps = calloc(1, sizeof(*ps));

	if (!ps)
		return NULL;
	ps->kind = kind;
	ps->id = id;
	ps->hash_next = sp->sources[h];
	sp->sources[h] = ps;
	return ps;
}

/*
 * A thread is exported once it has made min_iterations, or is hung in one:
 * a thread that waited a few times is no loop worth a series (ssh, a sync
 * client's timeout). Once in, it stays in.
 */
static bool thread__admitted(const struct loop_thread *t, __u64 min_iterations)
{
	return t->snap.iterations >= min_iterations || t->busy_now_ns >= PROM_ADMIT_BUSY_NS;
}

static struct prom_source *thread__source(struct prom_registry *sp, const struct loop_thread *t)
{
	unsigned int h = t->tid % PROM_HASH;
	struct prom_source *ps;

	for (ps = sp->sources[h]; ps; ps = ps->hash_next) {
		if (ps->kind == PROM_LOOP && ps->id == t->tid && ps->start_ns == t->start_ns)
			return ps;
	}
	if (!thread__admitted(t, sp->opts.min_iterations))
		return NULL;
	ps = source__new(sp, h, PROM_LOOP, t->tid);
	if (ps)
		ps->start_ns = t->start_ns;
	return ps;
}

static bool agg__is_source(const struct prom_agg *a, const struct prom_source *ps)
{
	if (ps->kind != a->kind || ps->id != a->pid || strcmp(ps->key, a->key))
		return false;
	/*
	 * A probe's name is no identity: the model sums the kernel records of
	 * the probes that share its label, each named by whichever thread
	 * called first. Another program under the pid shows as new labels.
	 */
	return a->kind == PROM_PROBE || !strcmp(ps->comm, a->comm);
}

static struct prom_source *agg__source(struct prom_registry *sp, const struct prom_agg *a)
{
	unsigned int h = (a->pid ^ str__hash(a->key)) % PROM_HASH;
	struct prom_source *ps;

	for (ps = sp->sources[h]; ps; ps = ps->hash_next) {
		if (agg__is_source(a, ps))
			return ps;
	}
	ps = source__new(sp, h, a->kind, a->pid);
	if (ps) {
		snprintf(ps->key, sizeof(ps->key), "%s", a->key);
		snprintf(ps->comm, sizeof(ps->comm), "%s", a->comm);
	}
	return ps;
}

/* Whatever the source added to its series so far stays there for good. */
static void source__retire(struct prom_source *ps)
{
	if (ps->series)
		counts__add_diff(&ps->series->retired, &ps->last, &ps->base);
	ps->base = ps->last;
}

static void source__fold(struct prom_registry *sp, struct prom_source *ps, const char *labels,
			 const struct prom_counts *now, bool exited)
{
	static struct prom_counts zero;
	struct prom_series *s;

	ps->seen = true;
	ps->exited = exited;
	if (ps->dropped) {
		/*
		 * Counters that move again are a process still there (one with
		 * no loop thread, quiet for the grace period): it counts anew,
		 * from here, in a new series.
		 */
		if (!counts__any_below(&ps->last, now))
			return;
		ps->dropped = false;
	}
	s = series__get(sp, ps->kind, labels);
	if (!s) {
		if (!ps->capped)
			sp->self[PROM_SELF_SERIES_CAPPED]++;
		ps->capped = true;
		return;
	}
	ps->capped = false;
	if (counts__any_below(now, &ps->last)) {
		/*
		 * The kernel record was recreated: its counts start from zero
		 * again. A probe's are a sum of records, and when only some
		 * went the rest were counted already: only what comes after
		 * is new (the eviction loses one interval, never counts twice).
		 */
		source__retire(ps);
		ps->base = ps->last = ps->kind == PROM_PROBE ? *now : zero;
	}
	if (ps->series != s) {
		/* a new source, or a renamed one: it counts in the new series from here */
		source__retire(ps);
		ps->series = s;
	}
	ps->last = *now;
}

/*
 * The series' kernel buckets grow by what the thread's histogram grew since
 * the last fold, in whichever series it counts in now: the same counts as
 * the classic buckets (a record made afresh counts from zero, a new series
 * from here on), so count and sum are shared by both.
 */
static void native__fold(struct prom_source *ps, const struct loop_thread *t)
{
	const __u64 *now = t->snap.busy_hist.counts;
	bool restarted = false;

	if (!ps->series)
		return;
	if (!ps->series->native &&
	    !(ps->series->native = calloc(LW_HIST_BUCKETS, sizeof(__u64))))
		return;
	if (!ps->native_last && !(ps->native_last = calloc(LW_HIST_BUCKETS, sizeof(__u64))))
		return;
	for (unsigned int b = 0; b < LW_HIST_BUCKETS && !restarted; b++)
		restarted = now[b] < ps->native_last[b];
	if (restarted)
		memset(ps->native_last, 0, LW_HIST_BUCKETS * sizeof(__u64));
	for (unsigned int b = 0; b < LW_HIST_BUCKETS; b++) {
		ps->series->native[b] += now[b] - ps->native_last[b];
		ps->native_last[b] = now[b];
	}
}

const __u64 *prom_registry__native(const struct prom_registry *sp, const char *labels)
{
	unsigned int h = str__hash(labels);

	for (const struct prom_series *s = sp->series[h]; s; s = s->hash_next) {
		if (s->kind == PROM_LOOP && !strcmp(s->labels, labels))
			return s->native;
	}
	return NULL;
}

bool prom_registry__has_native(const struct prom_registry *sp)
{
	return sp->opts.native;
}

static void thread__fold(struct prom_registry *sp, const struct loop_thread *t)
{
	char labels[PROM_LABELS_LEN];
	struct prom_source *ps = thread__source(sp, t);
	struct prom_counts now;

	if (!ps)
		return;
	labels__build(labels, sizeof(labels), t, sp->opts.per_pid);
	counts__from_thread(&now, t);
	source__fold(sp, ps, labels, &now, t->exited);
	if (sp->opts.native)
		native__fold(ps, t);
	ps->busy_now_ns = t->busy_now_ns;
}

static int thread__cmp_pid(const void *a, const void *b)
{
	const struct loop_thread *x = *(struct loop_thread *const *)a;
	const struct loop_thread *y = *(struct loop_thread *const *)b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	/* live threads first: their exe and cgroup are the process's current ones */
	return (int)x->exited - (int)y->exited;
}

/*
 * The loop thread that names an aggregate's process: one with its pid,
 * preferably of the same name (an exited process whose pid was reused may
 * still be in the model), preferably alive. v is sorted by thread__cmp_pid.
 */
/* The index of pid's first thread in v, sorted by thread__cmp_pid (n if none). */
static size_t threads__first_of(struct loop_thread **v, size_t n, __u32 pid)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid]->pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static const struct loop_thread *threads__of_process(struct loop_thread **v, size_t n,
						     __u32 pid, const char *comm)
{
	const struct loop_thread *any = NULL;

	for (size_t i = threads__first_of(v, n, pid); i < n && v[i]->pid == pid; i++) {
		if (!strcmp(v[i]->comm, comm))
			return v[i];
		if (!any)
			any = v[i];
	}
	return any;
}

/* Has a thread of pid made min_iterations? v is sorted by thread__cmp_pid. */
static bool process__admitted(struct loop_thread **v, size_t n, __u32 pid, __u64 min_iterations)
{
	for (size_t i = threads__first_of(v, n, pid); i < n && v[i]->pid == pid; i++) {
		if (thread__admitted(v[i], min_iterations))
			return true;
	}
	return false;
}

static void agg__fold(struct prom_registry *sp, struct prom_agg *a, struct loop_thread **by_pid,
		      size_t n)
{
	const struct loop_thread *t = threads__of_process(by_pid, n, a->pid, a->comm);
	char labels[PROM_LABELS_LEN];
	struct prom_source *ps;
	bool alive;

	/*
	 * Blocking calls belong to loops: those of a process whose threads are
	 * kept out by min_iterations stay out with them (probes are asked for).
	 */
	if (a->kind == PROM_SYSCALL && t && !process__admitted(by_pid, n, a->pid,
							       sp->opts.min_iterations))
		return;

	/*
	 * A probe record is named by the thread that called first, a loop
	 * series by its process: the process's name lets the two join.
	 */
	if (t && a->kind == PROM_PROBE)
		a->comm = t->comm;
	ps = agg__source(sp, a);
	if (!ps)
		return;
	/*
	 * The kernel keeps the aggregate after the process is gone, the model
	 * forgets its threads sooner: without a thread to ask, the labels stay
	 * those it counted under, or the series would move to exe="".
	 */
	if (!t && ps->series)
		snprintf(labels, sizeof(labels), "%s", ps->series->labels);
	else
		labels__agg(labels, sizeof(labels), a, t, sp->opts.per_pid);
	/* probes fire in processes with no loop thread too: counting is living */
	alive = (t && !t->exited) || counts__any_below(&ps->last, &a->now);
	source__fold(sp, ps, labels, &a->now, !alive);
}

static void syscall__fold(struct prom_registry *sp, const struct syscall_agg *sc,
			  struct loop_thread **by_pid, size_t n)
{
	struct prom_agg a = { PROM_SYSCALL, sc->pid, sc->comm, sc->name, {} };

	a.now.total_ns = sc->total_ns;
	a.now.calls = sc->count;
	agg__fold(sp, &a, by_pid, n);
}

static void probe__fold(struct prom_registry *sp, const struct probe_agg *pr,
			struct loop_thread **by_pid, size_t n)
{
	struct prom_agg a = { PROM_PROBE, pr->pid, pr->comm, pr->label, {} };

	a.now.total_ns = pr->total_ns;
	a.now.calls = pr->calls;
	a.now.busy_ns = pr->busy_ns;
	agg__fold(sp, &a, by_pid, n);
}

static void aggs__fold(struct prom_registry *sp, const struct model *m)
{
	struct loop_thread **by_pid = NULL;
	size_t n = 0;

	if (!m->nsyscalls && !m->nprobes)
		return;
	/*
	 * Without the index every aggregate is still folded (known ones keep
	 * their labels): one left unseen would be retired, then counted again
	 * in full when it is next seen.
	 */
	if (m->nthreads)
		by_pid = malloc(m->nthreads * sizeof(*by_pid));
	if (by_pid) {
		n = m->nthreads;
		memcpy(by_pid, m->threads, n * sizeof(*by_pid));
		qsort(by_pid, n, sizeof(*by_pid), thread__cmp_pid);
	}
	for (size_t i = 0; i < m->nsyscalls; i++)
		syscall__fold(sp, &m->syscalls[i], by_pid, n);
	for (size_t i = 0; i < m->nprobes; i++)
		probe__fold(sp, &m->probes[i], by_pid, n);
	free(by_pid);
}

static void source__free_unseen(struct prom_registry *sp)
{
	for (unsigned int h = 0; h < PROM_HASH; h++) {
		struct prom_source **pp = &sp->sources[h];

		while (*pp) {
			struct prom_source *ps = *pp;

			if (ps->seen) {
				pp = &ps->hash_next;
				continue;
			}
			/*
			 * Gone from the model, or from the kernel's table without
			 * its exit seen: its counters can only be kept as retired.
			 */
			source__retire(ps);
			*pp = ps->hash_next;
			free(ps->native_last);
			free(ps);
		}
	}
}

static void series__sum(struct prom_registry *sp, double now_s)
{
	for (unsigned int h = 0; h < PROM_HASH; h++) {
		for (struct prom_series *s = sp->series[h]; s; s = s->hash_next) {
			s->total = s->retired;
			s->live = 0;
			s->busy_now_ns = 0;
		}
	}
	sp->nlive_threads = 0;
	for (unsigned int h = 0; h < PROM_HASH; h++) {
		for (struct prom_source *ps = sp->sources[h]; ps; ps = ps->hash_next) {
			if (!ps->series)
				continue;
			counts__add_diff(&ps->series->total, &ps->last, &ps->base);
			if (ps->exited)
				continue;
			ps->series->live++;
			if (ps->busy_now_ns > ps->series->busy_now_ns)
				ps->series->busy_now_ns = ps->busy_now_ns;
			if (ps->kind == PROM_LOOP)
				sp->nlive_threads++;
		}
	}
	for (unsigned int h = 0; h < PROM_HASH; h++) {
		for (struct prom_series *s = sp->series[h]; s; s = s->hash_next) {
			if (s->live)
				s->dead_since = -1;
			else if (s->dead_since < 0)
				s->dead_since = now_s;
		}
	}
}

static int series__cmp_dead(const void *a, const void *b)
{
	const struct prom_series *x = *(struct prom_series *const *)a;
	const struct prom_series *y = *(struct prom_series *const *)b;

	return x->dead_since < y->dead_since ? -1 : x->dead_since > y->dead_since;
}

/*
 * Over the cap: the longest-dead series that are left go first, so that
 * live ones find room. Returns how many were doomed.
 */
static size_t series__doom_for_room(struct prom_registry *sp, size_t ndoomed)
{
	struct prom_series **dead;
	size_t n = 0, over, k;

	if (!sp->opts.max_series || sp->nseries - ndoomed <= sp->opts.max_series)
		return 0;
	over = sp->nseries - ndoomed - sp->opts.max_series;
	dead = malloc(sp->nseries * sizeof(*dead));
	if (!dead)
		return 0;
	for (unsigned int h = 0; h < PROM_HASH; h++) {
		for (struct prom_series *s = sp->series[h]; s; s = s->hash_next) {
			if (!s->doomed && s->dead_since >= 0)
				dead[n++] = s;
		}
	}
	qsort(dead, n, sizeof(*dead), series__cmp_dead);
	for (k = 0; k < n && k < over; k++)
		dead[k]->doomed = true;
	free(dead);
	return k;
}

/*
 * Series whose every source is gone (a process, a container, a version of a
 * program) go once they have been dead for the staleness window: a fleet's
 * churn must not grow the export for ever. Live series never go, so their
 * counters never go back. One pass over the series, one over the sources:
 * churn costs linear time, however many go at once.
 */
static void series__expire(struct prom_registry *sp, double now_s)
{
	size_t ndoomed = 0, capped;

	for (unsigned int h = 0; h < PROM_HASH; h++) {
		for (struct prom_series *s = sp->series[h]; s; s = s->hash_next) {
			s->doomed = s->dead_since >= 0 && s->dead_since <= now_s - sp->opts.stale_s;
			ndoomed += s->doomed;
		}
	}
	sp->self[PROM_SELF_SERIES_EXPIRED] += ndoomed;
	capped = series__doom_for_room(sp, ndoomed);
	sp->self[PROM_SELF_SERIES_CAPPED] += capped;
	if (!ndoomed && !capped)
		return;
	for (unsigned int h = 0; h < PROM_HASH; h++) {
		for (struct prom_source *ps = sp->sources[h]; ps; ps = ps->hash_next) {
			if (ps->series && ps->series->doomed) {
				ps->series = NULL;
				ps->dropped = true;
			}
		}
	}
	for (unsigned int h = 0; h < PROM_HASH; h++) {
		struct prom_series **pp = &sp->series[h];

		while (*pp) {
			struct prom_series *s = *pp;

			if (!s->doomed) {
				pp = &s->hash_next;
				continue;
			}
			*pp = s->hash_next;
			free(s->labels);
			free(s->native);
			free(s);
			sp->nseries--;
		}
	}
}

static void prom_registry__fold(struct prom_registry *sp, const struct model *m, double now_s)
{
	for (unsigned int h = 0; h < PROM_HASH; h++) {
		for (struct prom_source *ps = sp->sources[h]; ps; ps = ps->hash_next)
			ps->seen = false;
	}
	for (size_t i = 0; i < m->nthreads; i++)
		thread__fold(sp, m->threads[i]);
	aggs__fold(sp, m);
	source__free_unseen(sp);
	series__sum(sp, now_s);
	series__expire(sp, now_s);
}

static int series__cmp(const void *a, const void *b)
{
	const struct prom_series *x = *(struct prom_series *const *)a;
	const struct prom_series *y = *(struct prom_series *const *)b;

	return strcmp(x->labels, y->labels);
}

/* Stable output order makes successive files diffable. */
static struct prom_series **series__sorted(struct prom_registry *sp, enum prom_kind kind, size_t *n)
{
	struct prom_series **v = calloc(sp->nseries + 1, sizeof(*v));
	size_t k = 0;

	*n = 0;
	if (!v)
		return NULL;
	for (unsigned int h = 0; h < PROM_HASH; h++) {
		for (struct prom_series *s = sp->series[h]; s && k < sp->nseries; s = s->hash_next) {
			if (s->kind == kind)
				v[k++] = s;
		}
	}
	qsort(v, k, sizeof(*v), series__cmp);
	*n = k;
	return v;
}

/* Exact decimal seconds: a double would round large totals unevenly. */
static void seconds__print(FILE *out, __u64 ns)
{
	fprintf(out, "%llu.%09llu", (unsigned long long)(ns / 1000000000ULL),
		(unsigned long long)(ns % 1000000000ULL));
}

static void family__header(FILE *out, const char *name, const char *type, const char *help)
{
	fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void family__histogram(FILE *out, struct prom_series **v, size_t n)
{
	const char *name = "loopwatch_loop_iteration_seconds";

	family__header(out, name, "histogram",
		       "Busy time of event-loop iterations: from the return of a wait call "
		       "to the next wait call.");
	for (size_t i = 0; i < n; i++) {
		const struct prom_counts *c = &v[i]->total;

		for (size_t b = 0; b < PROM_NBUCKETS; b++)
			fprintf(out, "%s_bucket{%s,le=\"%s\"} %llu\n", name, v[i]->labels,
				prom_buckets[b].le, (unsigned long long)c->le[b]);
		fprintf(out, "%s_bucket{%s,le=\"+Inf\"} %llu\n", name, v[i]->labels,
			(unsigned long long)c->count);
		fprintf(out, "%s_sum{%s} ", name, v[i]->labels);
		seconds__print(out, c->busy_ns);
		fprintf(out, "\n%s_count{%s} %llu\n", name, v[i]->labels,
			(unsigned long long)c->count);
	}
}

/*
 * Arrival-weighted lag as a histogram of time, not of events: _count is the
 * time watched, a bucket the part of it at which an event arriving would
 * have waited at most le. histogram_quantile() over its rate gives the
 * quantiles of what a request arriving at a random moment waits.
 */
static void family__arrival(FILE *out, struct prom_series **v, size_t n)
{
	const char *name = "loopwatch_loop_arrival_lag_seconds";

	family__header(out, name, "histogram",
		       "What an event arriving at a random moment waits for the iteration under "
		       "way (0 while the loop waits), weighted by time: _count is the seconds "
		       "watched, a bucket the seconds at which the wait was at most le, _sum the "
		       "integral of the wait (seconds^2). P(wait > x) = 1 - rate(bucket{le=x}) / "
		       "rate(_count).");
	for (size_t i = 0; i < n; i++) {
		const struct prom_counts *c = &v[i]->total;

		for (size_t b = 0; b <= PROM_NBUCKETS; b++) {
			fprintf(out, "%s_bucket{%s,le=\"%s\"} ", name, v[i]->labels,
				b ? prom_buckets[b - 1].le : "0");
			seconds__print(out, c->arrival_le[b]);
			fputc('\n', out);
		}
		fprintf(out, "%s_bucket{%s,le=\"+Inf\"} ", name, v[i]->labels);
		seconds__print(out, c->span_ns);
		fprintf(out, "\n%s_sum{%s} %.6f\n%s_count{%s} ", name, v[i]->labels,
			(double)c->arrival_us2 / 1e12, name, v[i]->labels);
		seconds__print(out, c->span_ns);
		fputc('\n', out);
	}
}

enum prom_field {
	F_BUSY, F_IDLE, F_BLOCKED, F_RUNQ, F_ITERATIONS, F_STALLS, F_STALL_BUSY, F_TOTAL, F_CALLS,
	F_THROTTLED,
	F_GIL
};

/* The counter families in the order they are written: one field of one kind's series. */
static const struct prom_family {
	enum prom_kind kind;
	enum prom_field field;
	const char *name;
	const char *help;
} prom_counters[] = {
	{ PROM_LOOP, F_BUSY, "loopwatch_loop_busy_seconds_total",
	  "Time event loops spent between wait calls (handling events)." },
	{ PROM_LOOP, F_IDLE, "loopwatch_loop_idle_seconds_total",
	  "Time event loops spent inside wait calls." },
	{ PROM_LOOP, F_BLOCKED, "loopwatch_loop_blocked_seconds_total",
	  "Of loopwatch_loop_busy_seconds_total, the time loop threads slept (in a blocking "
	  "syscall or a page fault)." },
	{ PROM_LOOP, F_RUNQ, "loopwatch_loop_runq_seconds_total",
	  "Of loopwatch_loop_busy_seconds_total, the time loop threads were runnable but "
	  "waited for a CPU. Busy minus blocked, runq and gil is time on a CPU." },
	{ PROM_LOOP, F_THROTTLED, "loopwatch_loop_throttled_seconds_total",
	  "Of loopwatch_loop_runq_seconds_total, the time the loop thread's cgroup was "
	  "throttled by its CPU quota (cpu.max, cpu.cfs_quota_us) while it waited." },
	{ PROM_LOOP, F_GIL, "loopwatch_loop_gil_seconds_total",
	  "Of loopwatch_loop_busy_seconds_total, the time Python loop threads slept waiting "
	  "for their interpreter's GIL (not in loopwatch_loop_blocked_seconds_total)." },
	{ PROM_LOOP, F_ITERATIONS, "loopwatch_loop_iterations_total",
	  "Event-loop iterations (wait calls that returned and were followed by another)." },
	{ PROM_LOOP, F_STALLS, "loopwatch_stalls_total",
	  "Loop iterations at or over the stall threshold (--threshold)." },
	{ PROM_LOOP, F_STALL_BUSY, "loopwatch_loop_stall_seconds_total",
	  "Of loopwatch_loop_busy_seconds_total, the time in iterations at or over the stall "
	  "threshold (--threshold; within 3 % of one histogram bucket); over the rate of "
	  "loopwatch_loop_arrival_lag_seconds_count, the share of the time the loop is stalled." },
	{ PROM_SYSCALL, F_TOTAL, "loopwatch_blocking_syscall_seconds_total",
	  "Time loop threads slept inside a syscall while handling events (between two wait "
	  "calls), per process and syscall; page_fault is a sleep outside any syscall." },
	{ PROM_SYSCALL, F_CALLS, "loopwatch_blocking_syscalls_total",
	  "Syscall invocations that put a loop thread to sleep while handling events, per "
	  "process and syscall." },
	{ PROM_PROBE, F_TOTAL, "loopwatch_probe_seconds_total",
	  "Time inside calls of a probed function (--list-probes, --probe), per process and "
	  "probe; a call nested in another probed call counts once." },
	{ PROM_PROBE, F_CALLS, "loopwatch_probe_calls_total",
	  "Calls of a probed function, per process and probe." },
	{ PROM_PROBE, F_BUSY, "loopwatch_probe_busy_seconds_total",
	  "Of loopwatch_probe_seconds_total, the time inside the busy periods of loop threads: "
	  "over loopwatch_loop_busy_seconds_total, the share of loop busy time." },
};
#define PROM_NCOUNTERS (sizeof(prom_counters) / sizeof(prom_counters[0]))

static void family__counter(FILE *out, struct prom_series **v, size_t n,
			    const struct prom_family *f)
{
	family__header(out, f->name, "counter", f->help);
	for (size_t i = 0; i < n; i++) {
		const struct prom_counts *c = &v[i]->total;

		fprintf(out, "%s{%s} ", f->name, v[i]->labels);
		switch (f->field) {
		case F_BUSY:
			seconds__print(out, c->busy_ns);
			break;
		case F_IDLE:
			seconds__print(out, c->idle_ns);
			break;
		case F_BLOCKED:
			seconds__print(out, c->blocked_ns);
			break;
		case F_RUNQ:
			seconds__print(out, c->runq_ns);
			break;
		case F_THROTTLED:
			seconds__print(out, c->throttled_ns);
			break;
		case F_GIL:
			seconds__print(out, c->gil_ns);
			break;
		case F_ITERATIONS:
			fprintf(out, "%llu", (unsigned long long)c->iterations);
			break;
		case F_STALLS:
			fprintf(out, "%llu", (unsigned long long)c->stalls);
			break;
		case F_STALL_BUSY:
			seconds__print(out, c->stall_busy_ns);
			break;
		case F_TOTAL:
			seconds__print(out, c->total_ns);
			break;
		case F_CALLS:
			fprintf(out, "%llu", (unsigned long long)c->calls);
			break;
		}
		fputc('\n', out);
	}
}

/* A hung loop has no iteration to count: its current one's age, live. */
static void family__busy_now(FILE *out, struct prom_series **v, size_t n)
{
	const char *name = "loopwatch_loop_busy_now_seconds";

	family__header(out, name, "gauge",
		       "How long the longest-running current iteration of the series' loop "
		       "threads has lasted so far (0 while they all wait): a hung loop grows it.");
	for (size_t i = 0; i < n; i++) {
		fprintf(out, "%s{%s} ", name, v[i]->labels);
		seconds__print(out, v[i]->busy_now_ns);
		fputc('\n', out);
	}
}

/* What the Prometheus outputs count about themselves. */
static void family__self_outputs(FILE *out, const struct prom_registry *sp)
{
	static const struct {
		enum prom_self what;
		const char *name;
		const char *help;
	} self[] = {
		{ PROM_SELF_SERIES_CAPPED, "loopwatch_series_dropped_total",
		  "Series the cap (--prom-max-series) kept out or removed before their "
		  "staleness window ended." },
		{ PROM_SELF_SERIES_EXPIRED, "loopwatch_series_expired_total",
		  "Series removed after no process counted in them for the staleness window "
		  "(--prom-stale)." },
		{ PROM_SELF_WRITE_ERRORS, "loopwatch_textfile_write_errors_total",
		  "Writes of the --prom-file textfile that failed." },
		{ PROM_SELF_SCRAPES, "loopwatch_scrapes_total",
		  "Requests for /metrics answered on --listen." },
		{ PROM_SELF_CONNS_DROPPED, "loopwatch_scrape_connections_dropped_total",
		  "Connections to --listen closed unanswered or cut: too slow, too many at "
		  "once, or not a request." },
		{ PROM_SELF_OTLP_SENT, "loopwatch_otlp_requests_sent_total",
		  "OTLP requests (--otlp) the receiver accepted." },
		{ PROM_SELF_OTLP_DROPPED, "loopwatch_otlp_requests_dropped_total",
		  "OTLP requests dropped: the queue was full (the receiver down or slow)." },
		{ PROM_SELF_OTLP_REFUSED, "loopwatch_otlp_requests_refused_total",
		  "OTLP requests the receiver refused (HTTP 4xx)." },
		{ PROM_SELF_OTLP_RETRIED, "loopwatch_otlp_requests_retried_total",
		  "OTLP request attempts that failed (no connection, timeout, 429, 5xx) and "
		  "were retried." },
	};

	family__header(out, "loopwatch_series", "gauge", "Series in this exposition.");
	fprintf(out, "loopwatch_series %zu\n", sp->nseries);
	for (size_t i = 0; i < sizeof(self) / sizeof(self[0]); i++) {
		family__header(out, self[i].name, "counter", self[i].help);
		fprintf(out, "%s %llu\n", self[i].name,
			(unsigned long long)sp->self[self[i].what]);
	}
}

/* The kernel side's own counters (bpf/lw_abi.h, enum lw_counter); the table full one last. */
static void family__kernel_counters(FILE *out, const struct model *m)
{
	static const struct {
		enum lw_counter which;
		const char *name;
		const char *help;
	} ctr[] = {
		{ LW_CTR_SWITCH_INS_MISSED, "loopwatch_switch_ins_missed_total",
		  "Loop threads seen running with a switch-out still open (its switch-in "
		  "never seen): the sleep it began is booked up to its wake-up, or up to "
		  "then if that went unseen too." },
		{ LW_CTR_PREEMPTIONS, "loopwatch_preemptions_total",
		  "Loop threads preempted inside a busy period." },
		{ LW_CTR_STACK_WALKS, "loopwatch_stack_walks_total",
		  "User stacks walked: CPU samples of loop threads past the sampling gate "
		  "(1/16 of the slow threshold of the iteration's own time) or owed by a "
		  "long wait for a CPU, sleeps inside busy periods, probed calls over "
		  "--probe-threshold, and preemptions of an iteration half way to the slow "
		  "threshold (a younger one's take none)." },
		{ LW_CTR_LOOPS_REFUSED, "loopwatch_loop_records_refused_total",
		  "Loop threads not tracked: the kernel refused to create their record "
		  "(out of memory, or a kernel limit loopwatch does not know). Above "
		  "zero, loops go unseen: alert on it." },
		{ LW_CTR_LOOPS_FULL, "loopwatch_loop_map_full_total",
		  "Loop threads not tracked: 4096 loop records were alive." },
	};

	for (size_t i = 0; i < sizeof(ctr) / sizeof(ctr[0]); i++) {
		family__header(out, ctr[i].name, "counter", ctr[i].help);
		fprintf(out, "%s %llu\n", ctr[i].name,
			(unsigned long long)m->kcounters[ctr[i].which]);
	}
}

static void family__self(FILE *out, const struct prom_registry *sp, const struct model *m)
{
	family__header(out, "loopwatch_build_info", "gauge",
		       "Always 1; the version of loopwatch in a label.");
	fprintf(out, "loopwatch_build_info{version=\"%s\"} 1\n", LOOPWATCH_VERSION);
	family__header(out, "loopwatch_last_write_duration_seconds", "gauge",
		       "How long the previous write of this file took.");
	fprintf(out, "loopwatch_last_write_duration_seconds %.6f\n", sp->last_write_s);
	family__header(out, "loopwatch_loop_threads_tracked", "gauge",
		       "Loop threads alive and traced.");
	fprintf(out, "loopwatch_loop_threads_tracked %zu\n", sp->nlive_threads);
	family__header(out, "loopwatch_events_dropped_total", "counter",
		       "Events (stalls, blocking calls) lost to a full ring buffer.");
	fprintf(out, "loopwatch_events_dropped_total %llu\n",
		(unsigned long long)m->events_dropped);
	family__self_outputs(out, sp);
	family__kernel_counters(out, m);
}

void prom_registry__set_write_time(struct prom_registry *sp, double seconds)
{
	sp->last_write_s = seconds;
}

void prom_registry__render(struct prom_registry *sp, const struct model *m, double now_s, FILE *out)
{
	enum prom_kind kind = PROM_LOOP;
	struct prom_series **v;
	size_t n;

	prom_registry__fold(sp, m, now_s);
	v = series__sorted(sp, kind, &n);
	family__arrival(out, v, n);
	family__histogram(out, v, n);
	family__busy_now(out, v, n);
	for (size_t i = 0; i < PROM_NCOUNTERS; i++) {
		if (prom_counters[i].kind != kind) {
			kind = prom_counters[i].kind;
			free(v);
			v = series__sorted(sp, kind, &n);
		}
		family__counter(out, v, n, &prom_counters[i]);
	}
	free(v);
	family__self(out, sp, m);
}

void prom_options__from_config(struct prom_options *opts, const struct sink_config *cfg)
{
	opts->per_pid = cfg->prom_per_pid;
	opts->stale_s = cfg->prom_stale_s;
	opts->max_series = cfg->prom_max_series;
	opts->min_iterations = cfg->prom_min_iterations;
	opts->native = cfg->prom_native;
}

void prom_registry__count(struct prom_registry *sp, enum prom_self what, __u64 n)
{
	if (what < PROM_SELF_N)
		sp->self[what] += n;
}

struct prom_registry *prom_registry__new(const struct prom_options *opts)
{
	struct prom_registry *sp = calloc(1, sizeof(*sp));

	if (sp)
		sp->opts = *opts;
	return sp;
}

static struct prom_registry *shared;

struct prom_registry *prom_registry__shared(const struct prom_options *opts)
{
	if (!shared)
		shared = prom_registry__new(opts);
	if (shared)
		shared->refs++;
	return shared;
}

void prom_registry__put(struct prom_registry *sp)
{
	if (!sp || --sp->refs > 0)
		return;
	if (sp == shared)
		shared = NULL;
	prom_registry__free(sp);
}

/* "# HELP name ..." or "# TYPE name ...": the name's length, 0 otherwise */
static size_t line__family(const char *line, const char *what)
{
	if (strncmp(line, what, 7))
		return 0;
	return strcspn(line + 7, " \n");
}

void prom_text__to_openmetrics(const char *text, FILE *out)
{
	const char *line = text;

	while (*line) {
		const char *end = strchr(line, '\n'), *next;
		size_t len = end ? (size_t)(end - line) : strlen(line), n;

		next = end ? end + 1 : line + len;
		n = line__family(line, "# HELP ");
		if (!n)
			n = line__family(line, "# TYPE ");
		/*
		 * HELP comes first: a counter is known by the TYPE line after it,
		 * which names the same family.
		 */
		if (n > 6 && !memcmp(line + 7 + n - 6, "_total", 6)) {
			const char *type = !strncmp(line, "# TYPE ", 7) ? line : next;
			const char *kind = type + 7 + n;

			if (!strncmp(type, "# TYPE ", 7) && !strncmp(type + 7, line + 7, n) &&
			    !strncmp(kind, " counter", 8)) {
				fprintf(out, "%.*s%.*s\n", (int)(7 + n - 6), line,
					(int)(len - 7 - n), line + 7 + n);
				line = next;
				continue;
			}
		}
		fprintf(out, "%.*s\n", (int)len, line);
		line = next;
	}
	fputs("# EOF\n", out);
}

void prom_registry__free(struct prom_registry *sp)
{
	if (!sp)
		return;
	for (unsigned int h = 0; h < PROM_HASH; h++) {
		while (sp->sources[h]) {
			struct prom_source *ps = sp->sources[h];

			sp->sources[h] = ps->hash_next;
			free(ps->native_last);
			free(ps);
		}
		while (sp->series[h]) {
			struct prom_series *s = sp->series[h];

			sp->series[h] = s->hash_next;
			free(s->labels);
			free(s->native);
			free(s);
		}
	}
	free(sp);
}
