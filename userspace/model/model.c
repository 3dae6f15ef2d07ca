// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/clock.h"
#include "lib/syscalls.h"
#include "lib/text.h"
#include "model/model.h"

#define MODEL_HASH 4096
/* threads kept at once; past this many the oldest exited go */
#define MODEL_MAX_THREADS 16384
/*
 * Exited threads kept for the summary (42 KiB each, two kernel snapshots):
 * under churn the oldest go once every output has read them (keep_exited_s),
 * counted, so memory and the work of each interval come back down once the
 * churn stops.
 */
#define MODEL_MAX_EXITED 16
/* a thread absent from the kernel's table this long is gone (its record was evicted) */
#define MODEL_GONE_NS 3000000000ull

struct model *model__new(__u64 stuck_ns)
{
	struct model *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->stuck_ns = stuck_ns;
	m->hash = calloc(MODEL_HASH, sizeof(*m->hash));
	m->attr = attribution__new();
	if (!m->hash || !m->attr) {
		model__free(m);
		return NULL;
	}
	return m;
}

void model__keep_exited(struct model *m, double seconds)
{
	m->keep_exited_s = seconds;
}

void model__free(struct model *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nthreads; i++)
		free(m->threads[i]);
	free(m->threads);
	free(m->offenders);
	free(m->syscalls);
	free(m->probes);
	free(m->hash);
	attribution__free(m->attr);
	free(m);
}

static struct loop_thread *model__find(struct model *m, __u32 tid, __u64 start_ns)
{
	struct loop_thread *t = m->hash[tid % MODEL_HASH];

	for (; t; t = t->hash_next) {
		if (t->tid == tid && t->start_ns == start_ns)
			return t;
	}
	return NULL;
}

static void model__unhash(struct model *m, struct loop_thread *t)
{
	struct loop_thread **pp = &m->hash[t->tid % MODEL_HASH];

	for (; *pp; pp = &(*pp)->hash_next) {
		if (*pp == t) {
			*pp = t->hash_next;
			return;
		}
	}
}

void model__forget(struct model *m, struct loop_thread *t)
{
	for (size_t i = 0; i < m->nthreads; i++) {
		if (m->threads[i] != t)
			continue;
		model__unhash(m, t);
		free(t);
		memmove(&m->threads[i], &m->threads[i + 1],
			(m->nthreads - i - 1) * sizeof(*m->threads));
		m->nthreads--;
		return;
	}
}

/* Drop the oldest exited thread to keep the model bounded. */
static void model__evict(struct model *m)
{
	for (size_t i = 0; i < m->nthreads; i++) {
		if (m->threads[i]->exited) {
			model__forget(m, m->threads[i]);
			m->exited_forgotten++;
			return;
		}
	}
}

/*
 * Past MODEL_MAX_EXITED exited threads, the oldest go, in one pass; the heap
 * they held goes back to the system when there was much of it.
 */
static void model__trim_exited(struct model *m)
{
	size_t exited = 0, drop, out = 0;

	for (size_t i = 0; i < m->nthreads; i++)
		exited += m->threads[i]->exited;
	if (exited <= MODEL_MAX_EXITED)
		return;
	drop = exited - MODEL_MAX_EXITED;
	for (size_t i = 0; i < m->nthreads; i++) {
		struct loop_thread *t = m->threads[i];

		if (drop && t->exited && t->closed && m->run_s - t->closed_s >= m->keep_exited_s) {
			model__unhash(m, t);
			free(t);
			drop--;
			m->exited_forgotten++;
			continue;
		}
		m->threads[out++] = t;
	}
	m->nthreads = out;
	malloc_trim(0);
}

static struct loop_thread *model__add(struct model *m, const struct lw_loop *snap)
{
	struct loop_thread *t;

	if (m->nthreads >= MODEL_MAX_THREADS)
		model__evict(m);
	if (m->nthreads == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 64;
		struct loop_thread **v = realloc(m->threads, cap * sizeof(*v));

		if (!v)
			return NULL;
		m->threads = v;
		m->cap = cap;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->pid = snap->pid;
	t->tid = snap->tid;
	t->start_ns = snap->start_ns;
	t->over_ns = m->stuck_ns;
	/* kernel-side names are a fallback when /proc is already gone */
	memcpy(t->comm, snap->comm, LW_COMM_LEN);
	memcpy(t->thread, snap->thread, LW_COMM_LEN);
	t->comm[LW_COMM_LEN - 1] = t->thread[LW_COMM_LEN - 1] = '\0';
	str__sanitize(t->comm);
	str__sanitize(t->thread);
	if (m->src && m->src->facts)
		m->src->facts(m->src->ctx, t->pid, t->exe, sizeof(t->exe), t->cgroup,
			      sizeof(t->cgroup), &t->cg);
	if (m->src && m->src->started_as)
		m->src->started_as(m->src->ctx, t->pid, t->started_as, sizeof(t->started_as));
	if (m->src && m->src->k8s_names && t->cg.kind == CGROUP_K8S)
		m->src->k8s_names(m->src->ctx, &t->cg, &t->k8s);
	t->hash_next = m->hash[t->tid % MODEL_HASH];
	m->hash[t->tid % MODEL_HASH] = t;
	m->threads[m->nthreads++] = t;
	return t;
}

/* How long the thread has been inside its current iteration (0: waiting). */
static __u64 loop_thread__busy_now(const struct loop_thread *t, __u64 now)
{
	const struct lw_loop *s = &t->snap;

	return !t->exited && !s->in_wait && s->busy_start_ns && now > s->busy_start_ns ?
	       now - s->busy_start_ns : 0;
}

/*
 * Busy and waiting time with the wait under way: it grows while the loop
 * waits and stays put while an iteration runs (it counts when it ends). An
 * exited thread's last wait has no end to measure: it counts what it had.
 */
static void loop_thread__span(struct loop_thread *t, const struct lw_loop *snap, __u64 now)
{
	__u64 span = snap->busy_ns + snap->idle_ns;

	if (!(snap->flags & LW_THREAD_EXITED) && snap->in_wait && snap->wait_enter_ns &&
	    now > snap->wait_enter_ns)
		span += now - snap->wait_enter_ns;
	/* a record made afresh starts over; otherwise it never goes back */
	if (span > t->span_ns || snap->busy_ns < t->snap.busy_ns)
		t->span_ns = span;
}

static void model__ingest(const struct lw_loop *snap, void *arg)
{
	struct model *m = arg;
	struct loop_thread *t = model__find(m, snap->tid, snap->start_ns);

	if (!t)
		t = model__add(m, snap);
	if (!t)
		return;
	loop_thread__span(t, snap, clock__mono_ns());
	t->snap = *snap;
	t->seen = true;
	/* in the kernel's table again after it was taken for gone: live again */
	t->exited = snap->flags & LW_THREAD_EXITED;
	if (!t->exited)
		t->closed = false;
	/* fresh at every drain: a hung loop's age is read between intervals too */
	t->busy_now_ns = loop_thread__busy_now(t, clock__mono_ns());
	t->run_delay_known = !t->exited && m->stuck_ns && t->busy_now_ns >= m->stuck_ns &&
			     m->src->run_delay &&
			     m->src->run_delay(m->src->ctx, t->pid, t->tid, &t->run_delay_ns);
	if (!t->exited && m->src->names) {
		char comm[LW_COMM_LEN], thread[LW_COMM_LEN];

		/* both or neither: a thread gone between the two keeps its last names */
		if (m->src->names(m->src->ctx, t->pid, t->tid, comm, thread)) {
			/* a new name: maybe a new program (exec), its exe too */
			if (strcmp(comm, t->comm) && m->src->facts)
				m->src->facts(m->src->ctx, t->pid, t->exe, sizeof(t->exe), t->cgroup,
					      sizeof(t->cgroup), &t->cg);
			if (strcmp(comm, t->comm) && m->src->started_as)
				m->src->started_as(m->src->ctx, t->pid, t->started_as,
						   sizeof(t->started_as));
			memcpy(t->comm, comm, LW_COMM_LEN);
			memcpy(t->thread, thread, LW_COMM_LEN);
		}
	}
}

static void loop_view__delta(struct model *m, struct loop_thread *t)
{
	static const struct lw_loop zero;
	struct loop_view *v = &t->interval;
	const struct lw_loop *now = &t->snap, *before = &t->prev;
	struct lw_hist *delta = &m->scratch;
	__u64 max_ns, span_before = t->prev_span_ns;

	/* a record made afresh for the same thread: counters that went back restart from zero */
	if (now->iterations < before->iterations || now->busy_ns < before->busy_ns ||
	    now->idle_ns < before->idle_ns || now->blocked_ns < before->blocked_ns ||
	    now->runq_ns < before->runq_ns || now->throttled_ns < before->throttled_ns ||
	    now->gil_ns < before->gil_ns ||
	    t->span_ns < span_before) {
		before = &zero;
		span_before = 0;
	}
	v->iterations = now->iterations - before->iterations;
	v->busy_ns = now->busy_ns - before->busy_ns;
	v->idle_ns = now->idle_ns - before->idle_ns;
	v->blocked_ns = now->blocked_ns - before->blocked_ns;
	v->runq_ns = now->runq_ns - before->runq_ns;
	v->throttled_ns = now->throttled_ns - before->throttled_ns;
	v->gil_ns = now->gil_ns - before->gil_ns;
	hist__diff(delta, &now->busy_hist, &before->busy_hist);
	/* a new all-time maximum was set in this interval: then it is exact */
	max_ns = now->max_busy_ns;
	hist__summarize(delta, max_ns, &v->lag);
	if (now->max_busy_ns != before->max_busy_ns)
		v->lag.max_ns = now->max_busy_ns;
	arrival__diff(&m->scratch_sums, &now->busy_sums, &before->busy_sums);
	arrival__summarize(delta, &m->scratch_sums, t->span_ns - span_before, max_ns, m->stuck_ns,
			   &v->arrival);
	/* the time in stalls is the kernel's exact sum, not the histogram's estimate */
	if (m->stuck_ns && v->arrival.span_ns)
		v->arrival.over_share = (double)(now->stall_busy_ns - before->stall_busy_ns) /
					(double)v->arrival.span_ns;
}

void model__end_interval(struct model *m, double interval_s, double run_s)
{
	__u64 now = clock__mono_ns();

	m->interval_s = interval_s;
	m->run_s = run_s;
	m->interval_dropped = m->events_dropped - m->dropped_at_interval;
	m->dropped_at_interval = m->events_dropped;
	for (size_t i = 0; i < m->nthreads; i++) {
		struct loop_thread *t = m->threads[i];

		/* gone, and its last interval shown: only the summary reads it now */
		if (t->closed) {
			memset(&t->interval, 0, sizeof(t->interval));
			t->busy_now_ns = 0;
			t->active = false;
			continue;
		}
		t->closed = t->exited;
		t->closed_s = run_s;
		loop_view__delta(m, t);
		/*
		 * A loop that never comes back to its wait call has no iteration
		 * to report: a hung loop must not vanish from the view.
		 */
		t->busy_now_ns = loop_thread__busy_now(t, now);
		t->active = t->interval.iterations > 0 ||
			    (m->stuck_ns && t->busy_now_ns >= m->stuck_ns);
		t->prev = t->snap;
		t->prev_span_ns = t->span_ns;
	}
	attribution__end_interval(m->attr);
	model__trim_exited(m);
}

void loop_thread__summary(const struct loop_thread *t, struct loop_view *out)
{
	out->iterations = t->snap.iterations;
	out->busy_ns = t->snap.busy_ns;
	out->idle_ns = t->snap.idle_ns;
	out->blocked_ns = t->snap.blocked_ns;
	out->runq_ns = t->snap.runq_ns;
	out->throttled_ns = t->snap.throttled_ns;
	out->gil_ns = t->snap.gil_ns;
	hist__summarize(&t->snap.busy_hist, t->snap.max_busy_ns, &out->lag);
	out->lag.max_ns = t->snap.max_busy_ns;
	arrival__summarize(&t->snap.busy_hist, &t->snap.busy_sums, t->span_ns,
			   t->snap.max_busy_ns, t->over_ns, &out->arrival);
	if (t->over_ns && out->arrival.span_ns)
		out->arrival.over_share = (double)t->snap.stall_busy_ns /
					  (double)out->arrival.span_ns;
}

double loop_view__utilization(const struct loop_view *v)
{
	__u64 total = v->busy_ns + v->idle_ns;

	return total ? (double)v->busy_ns / (double)total : 0.0;
}

/* a loop stuck right now is as bad as its current iteration is long */
static __u64 thread__badness(const struct loop_thread *t)
{
	__u64 p99 = t->interval.arrival.p99_ns;

	return t->busy_now_ns > p99 ? t->busy_now_ns : p99;
}

static int thread__cmp_interval(const void *a, const void *b)
{
	const struct loop_thread *x = *(struct loop_thread *const *)a;
	const struct loop_thread *y = *(struct loop_thread *const *)b;

	if (thread__badness(x) != thread__badness(y))
		return thread__badness(x) < thread__badness(y) ? 1 : -1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static __u64 thread__summary_p99(const struct loop_thread *t)
{
	return arrival__quantile(&t->snap.busy_hist, &t->snap.busy_sums, t->span_ns, 0.99,
				 t->snap.max_busy_ns);
}

static int thread__cmp_summary(const void *a, const void *b)
{
	const struct loop_thread *x = *(struct loop_thread *const *)a;
	const struct loop_thread *y = *(struct loop_thread *const *)b;
	__u64 px = thread__summary_p99(x), py = thread__summary_p99(y);

	if (px != py)
		return px < py ? 1 : -1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

struct loop_thread **model__sorted(const struct model *m, bool summary, size_t *n)
{
	struct loop_thread **v = calloc(m->nthreads + 1, sizeof(*v));
	size_t k = 0;

	*n = 0;
	if (!v)
		return NULL;
	for (size_t i = 0; i < m->nthreads; i++) {
		struct loop_thread *t = m->threads[i];

		if (summary ? t->snap.iterations > 0 : t->active)
			v[k++] = t;
	}
	qsort(v, k, sizeof(*v), summary ? thread__cmp_summary : thread__cmp_interval);
	*n = k;
	return v;
}

/* bounded: past this many distinct culprits new ones are folded into the last */
#define MODEL_MAX_OFFENDERS 4096

static size_t model__offender_index(struct model *m, const struct stall_report *r)
{
	struct offender *o;
	char function[sizeof(o->function)];

	/* one row per function: the same culprit called from two places, or a line apart */
	culprit__function(r->top, function, sizeof(function));
	for (size_t i = 0; i < m->noffenders; i++) {
		o = &m->offenders[i];
		if (o->pid == r->pid && !strcmp(o->function, function))
			return i;
	}
	if (m->noffenders >= MODEL_MAX_OFFENDERS)
		return m->noffenders - 1;
	if (m->noffenders == m->offenders_cap) {
		size_t cap = m->offenders_cap ? m->offenders_cap * 2 : 32;
		struct offender *v = realloc(m->offenders, cap * sizeof(*v));

		if (!v)
			return (size_t)-1;
		m->offenders = v;
		m->offenders_cap = cap;
	}
	o = &m->offenders[m->noffenders];
	memset(o, 0, sizeof(*o));
	o->pid = r->pid;
	memcpy(o->comm, r->comm, LW_COMM_LEN);
	culprit__without_call(r->top, o->top, sizeof(o->top));
	memcpy(o->function, function, sizeof(o->function));
	return m->noffenders++;
}

static void offender__add(struct offender *o, enum stall_cause cause, __u64 ns, double ts)
{
	o->count++;
	o->total_ns += ns;
	o->cause_ns[cause] += ns;
	if (ts > o->last_ts)
		o->last_ts = ts;
}

void model__add_stall(struct model *m, const struct stall_report *r)
{
	size_t idx = model__offender_index(m, r), slot;

	attribution__add_stall(m->attr, r);
	if (idx == (size_t)-1)
		return;
	offender__add(&m->offenders[idx], r->cause, r->duration_ns, r->ts);
	slot = m->nrecent++ % MODEL_RECENT_STALLS;
	m->recent[slot].ts = r->ts;
	m->recent[slot].offender = idx;
	m->recent[slot].ns = r->duration_ns;
	m->recent[slot].cause = r->cause;
}

enum stall_cause offender__cause(const struct offender *o)
{
	enum stall_cause best = CAUSE_CPU;

	for (int c = CAUSE_CPU; c <= CAUSE_RUNQ; c++) {
		if (o->cause_ns[c] > o->cause_ns[best])
			best = (enum stall_cause)c;
	}
	return best;
}

static int offender__cmp(const void *a, const void *b)
{
	const struct offender *x = a, *y = b;

	if (x->total_ns != y->total_ns)
		return x->total_ns < y->total_ns ? 1 : -1;
	return 0;
}

struct offender *model__offenders(const struct model *m, double since_ts, size_t *n)
{
	struct offender *v = calloc(m->noffenders + 1, sizeof(*v));
	size_t k = 0;

	*n = 0;
	if (!v)
		return NULL;
	if (since_ts <= 0) {
		memcpy(v, m->offenders, m->noffenders * sizeof(*v));
		k = m->noffenders;
	} else {
		size_t count = m->nrecent < MODEL_RECENT_STALLS ? m->nrecent : MODEL_RECENT_STALLS;

		for (size_t i = 0; i < m->noffenders; i++) {
			v[i] = m->offenders[i];
			v[i].count = v[i].total_ns = 0;
			memset(v[i].cause_ns, 0, sizeof(v[i].cause_ns));
		}
		for (size_t i = 0; i < count; i++) {
			if (m->recent[i].ts >= since_ts)
				offender__add(&v[m->recent[i].offender], m->recent[i].cause,
					      m->recent[i].ns, m->recent[i].ts);
		}
		for (size_t i = 0; i < m->noffenders; i++) {
			if (v[i].count)
				v[k++] = v[i];
		}
	}
	qsort(v, k, sizeof(*v), offender__cmp);
	*n = k;
	return v;
}

static void model__add_syscall(const struct lw_syscall_key *key,
			       const struct lw_syscall_stats *st, void *arg)
{
	struct model *m = arg;
	struct syscall_agg *a, *v;
	char buf[32];

	v = realloc(m->syscalls, (m->nsyscalls + 1) * sizeof(*v));
	if (!v)
		return;
	m->syscalls = v;
	a = &v[m->nsyscalls++];
	memset(a, 0, sizeof(*a));
	a->pid = key->pid;
	memcpy(a->comm, st->comm, LW_COMM_LEN);
	a->comm[LW_COMM_LEN - 1] = '\0';
	str__sanitize(a->comm);
	snprintf(a->name, sizeof(a->name), "%s", syscall__name(key->nr, buf, sizeof(buf)));
	a->count = st->count;
	a->total_ns = st->total_ns;
	hist__summarize(&st->hist, st->max_ns, &a->lat);
	a->lat.max_ns = st->max_ns;
}

static int syscall_agg__cmp(const void *a, const void *b)
{
	const struct syscall_agg *x = a, *y = b;

	if (x->total_ns != y->total_ns)
		return x->total_ns < y->total_ns ? 1 : -1;
	return 0;
}

static void model__add_probe(const struct lw_probe_key *key, const struct lw_probe_stats *st,
			     void *arg)
{
	struct model *m = arg;
	struct probe_agg *a, *v;
	char label[REPORT_LABEL_LEN];

	m->src->probe_label(m->src->ctx, key->id, label, sizeof(label));
	/* probes that share a label in one process are one line */
	for (size_t i = 0; i < m->nprobes; i++) {
		a = &m->probes[i];
		if (a->pid == key->pid && !strcmp(a->label, label)) {
			a->calls += st->calls;
			a->total_ns += st->total_ns;
			a->busy_ns += st->busy_ns;
			if (st->max_ns > a->lat.max_ns)
				a->lat.max_ns = st->max_ns;
			return;
		}
	}
	v = realloc(m->probes, (m->nprobes + 1) * sizeof(*v));
	if (!v)
		return;
	m->probes = v;
	a = &v[m->nprobes++];
	memset(a, 0, sizeof(*a));
	a->pid = key->pid;
	memcpy(a->comm, st->comm, LW_COMM_LEN);
	a->comm[LW_COMM_LEN - 1] = '\0';
	str__sanitize(a->comm);
	snprintf(a->label, sizeof(a->label), "%s", label);
	a->calls = st->calls;
	a->total_ns = st->total_ns;
	a->busy_ns = st->busy_ns;
	hist__summarize(&st->hist, st->max_ns, &a->lat);
	a->lat.max_ns = st->max_ns;
}

static int probe_agg__cmp(const void *a, const void *b)
{
	const struct probe_agg *x = a, *y = b;

	if (x->busy_share != y->busy_share)
		return x->busy_share < y->busy_share ? 1 : -1;
	return x->total_ns < y->total_ns ? 1 : x->total_ns > y->total_ns ? -1 : 0;
}

__u64 model__process_busy_ns(const struct model *m, __u32 pid, bool interval)
{
	__u64 busy = 0;

	for (size_t t = 0; t < m->nthreads; t++) {
		if (m->threads[t]->pid == pid)
			busy += interval ? m->threads[t]->interval.busy_ns : m->threads[t]->snap.busy_ns;
	}
	return busy;
}

/* Shares of busy time, then the largest first. */
static void model__finish_probes(struct model *m)
{
	for (size_t i = 0; i < m->nprobes; i++) {
		struct probe_agg *a = &m->probes[i];
		__u64 busy = model__process_busy_ns(m, a->pid, false);

		a->busy_share = busy ? (double)a->busy_ns / (double)busy : 0;
		if (a->busy_share > 1)
			a->busy_share = 1;
	}
	if (m->nprobes > 1)
		qsort(m->probes, m->nprobes, sizeof(*m->probes), probe_agg__cmp);
}

static void model__read_counters(struct model *m, const struct model_source *src)
{
	if (!src->counters)
		return;
	src->counters(src->ctx, m->kcounters);
	m->events_dropped = m->kcounters[LW_CTR_EVENTS_DROPPED];
	m->loops_full = m->kcounters[LW_CTR_LOOPS_FULL];
	m->switch_ins_missed = m->kcounters[LW_CTR_SWITCH_INS_MISSED];
	m->loops_refused = m->kcounters[LW_CTR_LOOPS_REFUSED];
}

static void model__drain_aggregates(struct model *m, const struct model_source *src)
{
	m->nsyscalls = 0;
	if (src->syscalls)
		src->syscalls(src->ctx, model__add_syscall, m);
	if (m->nsyscalls > 1)
		qsort(m->syscalls, m->nsyscalls, sizeof(*m->syscalls), syscall_agg__cmp);
	m->nprobes = 0;
	if (src->probes && src->probe_label)
		src->probes(src->ctx, model__add_probe, m);
	model__finish_probes(m);
	model__read_counters(m, src);
}

/* At most once a second: the threads absent from the kernel's table, for how long. */
static void model__find_gone(struct model *m)
{
	__u64 now = clock__mono_ns();

	if (now - m->gone_checked_ns < 1000000000ull)
		return;
	m->gone_checked_ns = now;
	for (size_t i = 0; i < m->nthreads; i++) {
		struct loop_thread *t = m->threads[i];

		if (t->seen)
			t->unseen_ns = 0;
		else if (!t->unseen_ns)
			t->unseen_ns = now;
		else if (now - t->unseen_ns >= MODEL_GONE_NS)
			t->exited = true;
	}
}

void model__drain(struct model *m, const struct model_source *src, unsigned int what)
{
	m->src = src;
	if (what & MODEL_LOOPS) {
		for (size_t i = 0; i < m->nthreads; i++)
			m->threads[i]->seen = false;
		if (src->loops)
			src->loops(src->ctx, model__ingest, m);
		/*
		 * A record gone from the kernel's table for MODEL_GONE_NS without its
		 * exit seen (its last copy was lost: the table of exited records was
		 * full, counted as dropped events). It counts as exited, or the model
		 * would keep it, and compute it, forever.
		 */
		if (src->loops)
			model__find_gone(m);
		/* lost events are said in every output, each interval */
		model__read_counters(m, src);
	}
	if (what & MODEL_AGGREGATES)
		model__drain_aggregates(m, src);
	m->src = NULL;
}
