// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * --otlp URL: metrics and events as OTLP/HTTP protobuf (or JSON:
 * --otlp-encoding, written by otlpenc.c from the same calls), for an OpenTelemetry
 * Collector or any receiver of it (Prometheus 3's /api/v1/otlp). One
 * resource per traced process, named by OpenTelemetry's semantic
 * conventions (service.name, process.pid, process.executable.name,
 * container.id, k8s.*). Metrics, every --otlp-interval (independent of -i),
 * cumulative:
 *
 * - loopwatch.loop.iteration.duration: an exponential histogram (scale 8,
 *   0.27 % buckets) of the kernel's log-linear one, each of its buckets
 *   counted at its midpoint (lib/hist.h), in seconds;
 * - the loop's iterations, stalls, busy, blocked and run-queue time as
 *   monotonic sums;
 * - loopwatch's own: its OTLP requests sent, dropped, refused, retried.
 *
 * Stalls, hung loops and blocking calls are log records with their culprit
 * and stack. Encoding happens here, on the main loop, from the model; the
 * network is otlpsend.c's thread, behind a bounded queue.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "lib/clock.h"
#include "lib/hist.h"
#include "lib/text.h"
#include "model/attribution.h"
#include "sinks/otlpenc.h"
#include "sinks/otlpsend.h"
#include "sinks/promreg.h"
#include "sinks/sink.h"
#include "version.h"

/* the queue of encoded requests (what a receiver that is down costs at most), by default */
#define OTLP_QUEUE_BYTES (8u << 20)
/* at exit, what is queued gets this long to go */
#define OTLP_EXIT_WAIT_S 3.0
#define OTLP_MAX_PROCS 1024
#define OTLP_MAX_THREADS LW_MAX_LOOPS
/* log records between two sends; more are dropped and counted */
#define OTLP_MAX_LOGS 2000
/* a process gone this long is sent no more */
#define OTLP_PROC_KEEP_S 120.0
#define OTLP_STACK_LEN 4096

/* What one process has counted since it was first seen: all monotonic. */
struct otlp_proc {
	__u32 pid;
	char comm[LW_COMM_LEN];
	char exe[256];
	char service[CGROUP_SERVICE_LEN];
	struct cgroup_identity cg;
	struct k8s_names k8s;
	__u64 start_unix_ns;
	double unseen_since;	/* CLOCK_MONOTONIC; 0 while a thread of it is in the model */
	__u64 iterations, stalls, busy_ns, blocked_ns, runq_ns;
	__u64 hist[LW_HIST_BUCKETS];	/* the kernel's buckets, mapped when encoded */
};

/* A loop thread's counters as last folded into its process. */
struct otlp_thread {
	__u32 pid, tid;
	__u64 start_ns;
	bool seen;
	__u64 iterations, stalls, busy_ns, blocked_ns, runq_ns;
	__u64 hist[LW_HIST_BUCKETS];
};

struct otlp_log {
	__u64 ts_ns;
	__u32 pid, tid;
	char comm[LW_COMM_LEN];
	char thread[LW_COMM_LEN];
	const char *event;	/* "stall", "stuck", "blocking_call" */
	int severity;		/* SeverityNumber */
	double duration_ms, oncpu_ms, blocked_ms, runq_ms;
	double gil_ms, throttled_ms;	/* the other party's parts: the GIL's, the quota's of runq */
	const char *cause;
	char culprit[256];
	char syscall[32];
	char path[256];
	char stack[OTLP_STACK_LEN];
};

struct otlp {
	struct otlp_sender *sender;
	struct prom_registry *reg;	/* loopwatch's own metrics, beside the Prometheus ones */
	struct otlp_counts counted;	/* what reg has been told */
	double interval_s;
	double next_s;
	struct otlp_proc **procs;
	size_t nprocs;
	struct otlp_thread **threads;
	size_t nthreads;
	struct otlp_log *logs;
	size_t nlogs;
	__u64 logs_dropped;	/* no room between two sends */
	__u64 events_dropped;	/* the kernel's, at the last interval */
	__u64 start_unix_ns;
	int exp_index[LW_HIST_BUCKETS];	/* the kernel's bucket -> exp index (lib/hist.h) */
	enum otlp_encoding encoding;
	bool quiet;
};

static bool otlp__wanted(const struct sink_config *cfg)
{
	return cfg->otlp != NULL;
}

static void exp_index__init(int *idx)
{
	/* bucket 0 (value 0) is the zero bucket: its index is never read */
	for (unsigned int b = 0; b < LW_HIST_BUCKETS; b++)
		if (!hist__exp_index(b, &idx[b]))
			idx[b] = 0;
}

static int otlp__open(struct sink *s, const struct sink_config *cfg, char *err, size_t errlen)
{
	struct otlp *o = calloc(1, sizeof(*o));
	struct prom_options popts;

	if (!o || !(o->procs = calloc(OTLP_MAX_PROCS, sizeof(*o->procs))) ||
	    !(o->threads = calloc(OTLP_MAX_THREADS, sizeof(*o->threads))) ||
	    !(o->logs = calloc(OTLP_MAX_LOGS, sizeof(*o->logs)))) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	o->encoding = cfg->otlp_json ? OTLP_ENC_JSON : OTLP_ENC_PROTOBUF;
	o->sender = otlp_sender__new(cfg->otlp, cfg->otlp_queue_bytes ? cfg->otlp_queue_bytes :
				      OTLP_QUEUE_BYTES, cfg->otlp_json, err, errlen);
	if (!o->sender)
		goto fail;
	prom_options__from_config(&popts, cfg);
	o->reg = prom_registry__shared(&popts);
	o->interval_s = cfg->otlp_interval_s > 0 ? cfg->otlp_interval_s : 10;
	o->quiet = cfg->quiet;
	exp_index__init(o->exp_index);
	s->priv = o;
	return 0;
fail:
	if (o) {
		free(o->procs);
		free(o->threads);
		free(o->logs);
		free(o);
	}
	return -1;
}

static int otlp__start(struct sink *s, const struct model *m, double now)
{
	struct otlp *o = s->priv;

	(void)m;
	o->next_s = now + o->interval_s;
	o->start_unix_ns = (__u64)(clock__wall() * 1e9);
	return 0;
}

static struct otlp_proc *otlp__proc(struct otlp *o, const struct loop_thread *t)
{
	struct otlp_proc *p;

	for (size_t i = 0; i < o->nprocs; i++) {
		p = o->procs[i];
		if (p->pid != t->pid)
			continue;
		if (!strcmp(p->comm, t->comm))
			return p;
		/* the pid was reused: another process, counting from zero */
		memset(p, 0, sizeof(*p));
		goto fill;
	}
	if (o->nprocs == OTLP_MAX_PROCS || !(p = calloc(1, sizeof(*p))))
		return NULL;
	o->procs[o->nprocs++] = p;
fill:
	p->pid = t->pid;
	snprintf(p->comm, sizeof(p->comm), "%s", t->comm);
	p->start_unix_ns = (__u64)(clock__wall() * 1e9);
	return p;
}

static struct otlp_thread *otlp__thread(struct otlp *o, const struct loop_thread *t)
{
	struct otlp_thread *th;

	for (size_t i = 0; i < o->nthreads; i++) {
		th = o->threads[i];
		if (th->tid == t->tid && th->start_ns == t->start_ns)
			return th;
	}
	if (o->nthreads == OTLP_MAX_THREADS || !(th = calloc(1, sizeof(*th))))
		return NULL;
	th->pid = t->pid;
	th->tid = t->tid;
	th->start_ns = t->start_ns;
	o->threads[o->nthreads++] = th;
	return th;
}

static __u64 grown(__u64 now, __u64 before)
{
	return now > before ? now - before : 0;
}

/* p += what t counted since th last saw it; a record made afresh counts from zero */
static void otlp__fold(struct otlp_proc *p, struct otlp_thread *th,
		       const struct loop_thread *t)
{
	const struct lw_loop *now = &t->snap;

	if (now->iterations < th->iterations || now->busy_ns < th->busy_ns)
		memset(&th->iterations, 0, sizeof(*th) - offsetof(struct otlp_thread, iterations));
	p->iterations += grown(now->iterations, th->iterations);
	p->stalls += grown(now->stalls, th->stalls);
	p->busy_ns += grown(now->busy_ns, th->busy_ns);
	p->blocked_ns += grown(now->blocked_ns, th->blocked_ns);
	p->runq_ns += grown(now->runq_ns, th->runq_ns);
	th->iterations = now->iterations;
	th->stalls = now->stalls;
	th->busy_ns = now->busy_ns;
	th->blocked_ns = now->blocked_ns;
	th->runq_ns = now->runq_ns;
	for (unsigned int b = 0; b < LW_HIST_BUCKETS; b++) {
		__u64 c = now->busy_hist.counts[b], d = grown(c, th->hist[b]);

		th->hist[b] = c;
		p->hist[b] += d;
	}
}

/* Fold every thread in, let go of threads the model forgot and processes long gone. */
static void otlp__update(struct otlp *o, const struct model *m, double now)
{
	for (size_t i = 0; i < o->nthreads; i++)
		o->threads[i]->seen = false;
	for (size_t i = 0; i < o->nprocs; i++)
		if (!o->procs[i]->unseen_since)
			o->procs[i]->unseen_since = now;
	for (size_t i = 0; i < m->nthreads; i++) {
		const struct loop_thread *t = m->threads[i];
		struct otlp_proc *p = otlp__proc(o, t);
		struct otlp_thread *th = p ? otlp__thread(o, t) : NULL;

		if (!th)
			continue;
		th->seen = true;
		p->unseen_since = 0;
		if (!p->exe[0] && t->exe[0])
			snprintf(p->exe, sizeof(p->exe), "%s", t->exe);
		p->cg = t->cg;
		p->k8s = t->k8s;
		cgroup__service(&t->cg, &t->k8s, p->service, sizeof(p->service));
		otlp__fold(p, th, t);
	}
	for (size_t i = 0; i < o->nthreads;) {
		if (o->threads[i]->seen) {
			i++;
			continue;
		}
		free(o->threads[i]);
		o->threads[i] = o->threads[--o->nthreads];
	}
	for (size_t i = 0; i < o->nprocs;) {
		struct otlp_proc *p = o->procs[i];

		if (!p->unseen_since || now - p->unseen_since < OTLP_PROC_KEEP_S) {
			i++;
			continue;
		}
		free(p);
		o->procs[i] = o->procs[--o->nprocs];
	}
	o->events_dropped = m->events_dropped;
}

/*
 * Every message below is built once and written through otlpenc.h, which
 * encodes it as protobuf or as JSON: each field by its number and JSON name.
 */

/* KeyValue (a repeated "attributes") with a string, an int or a double AnyValue */
static void kv__str(struct otlp_enc *e, unsigned int field, const char *key, const char *value)
{
	size_t kv, any;

	if (!value[0])
		return;
	kv = otlp_enc__begin(e, field, "attributes", true);
	otlp_enc__string(e, 1, "key", key);
	any = otlp_enc__begin(e, 2, "value", false);
	otlp_enc__text(e, 1, "stringValue", value);
	otlp_enc__end(e, any);
	otlp_enc__end(e, kv);
}

static void kv__int(struct otlp_enc *e, unsigned int field, const char *key, __s64 value)
{
	size_t kv = otlp_enc__begin(e, field, "attributes", true), any;

	otlp_enc__string(e, 1, "key", key);
	any = otlp_enc__begin(e, 2, "value", false);
	otlp_enc__int64(e, 3, "intValue", value);
	otlp_enc__end(e, any);
	otlp_enc__end(e, kv);
}

static void kv__double(struct otlp_enc *e, unsigned int field, const char *key, double value)
{
	size_t kv = otlp_enc__begin(e, field, "attributes", true), any;

	otlp_enc__string(e, 1, "key", key);
	any = otlp_enc__begin(e, 2, "value", false);
	otlp_enc__double(e, 4, "doubleValue", value);
	otlp_enc__end(e, any);
	otlp_enc__end(e, kv);
}

/* Resource (field 1 of ResourceMetrics and ResourceLogs): the semantic conventions' names */
static void resource__put(struct otlp_enc *e, __u32 pid, const char *comm,
			  const struct otlp_proc *p)
{
	size_t mark = otlp_enc__begin(e, 1, "resource", false);

	kv__str(e, 1, "service.name", p && p->service[0] ? p->service : comm);
	kv__int(e, 1, "process.pid", pid);
	kv__str(e, 1, "process.executable.name", comm);
	if (p) {
		kv__str(e, 1, "process.executable.path", p->exe);
		kv__str(e, 1, "container.id", p->cg.container_id);
		kv__str(e, 1, "k8s.pod.uid", p->cg.pod_uid);
		kv__str(e, 1, "k8s.pod.name", p->k8s.pod);
		kv__str(e, 1, "k8s.namespace.name", p->k8s.ns);
		kv__str(e, 1, "k8s.container.name", p->k8s.container);
		if (p->cg.kind == CGROUP_SYSTEMD)
			kv__str(e, 1, "systemd.unit", p->cg.unit);
	}
	otlp_enc__end(e, mark);
}

static void scope__put(struct otlp_enc *e)
{
	size_t mark = otlp_enc__begin(e, 1, "scope", false);

	otlp_enc__string(e, 1, "name", "loopwatch");
	otlp_enc__string(e, 2, "version", LOOPWATCH_VERSION);
	otlp_enc__end(e, mark);
}

static size_t metric__begin(struct otlp_enc *e, const char *name, const char *unit,
			    const char *help)
{
	size_t mark = otlp_enc__begin(e, 2, "metrics", true);	/* ScopeMetrics.metrics */

	otlp_enc__string(e, 1, "name", name);
	otlp_enc__string(e, 2, "description", help);
	otlp_enc__string(e, 3, "unit", unit);
	return mark;
}

/* A cumulative monotonic Sum of one point, as_int or as_double. */
static void metric__sum(struct otlp_enc *e, const char *name, const char *unit, const char *help,
			__u64 start_ns, __u64 now_ns, bool is_double, __u64 ivalue, double dvalue)
{
	size_t metric = metric__begin(e, name, unit, help), sum, point;

	sum = otlp_enc__begin(e, 7, "sum", false);
	point = otlp_enc__begin(e, 1, "dataPoints", true);
	otlp_enc__fixed64(e, 2, "startTimeUnixNano", start_ns);
	otlp_enc__fixed64(e, 3, "timeUnixNano", now_ns);
	if (is_double)
		otlp_enc__double(e, 4, "asDouble", dvalue);
	else
		otlp_enc__sfixed64(e, 6, "asInt", (__s64)ivalue);
	otlp_enc__end(e, point);
	otlp_enc__enum(e, 2, "aggregationTemporality", 2);	/* CUMULATIVE */
	otlp_enc__bool(e, 3, "isMonotonic", true);
	otlp_enc__end(e, sum);
	otlp_enc__end(e, metric);
}

static void metric__lag(const struct otlp *o, struct otlp_enc *e, const struct otlp_proc *p,
			__u64 now_ns)
{
	size_t metric = metric__begin(e, "loopwatch.loop.iteration.duration", "s",
				      "Loop iterations by how long each kept the loop busy "
				      "(from a wait's return to the next wait).");
	size_t hist = otlp_enc__begin(e, 10, "exponentialHistogram", false), point, buckets;
	size_t packed;
	int first = -1, last = -1;
	__u64 count = 0;

	for (unsigned int k = 0; k < LW_HIST_BUCKETS; k++) {
		count += p->hist[k];
		if (!k || !p->hist[k])
			continue;
		if (first < 0)
			first = (int)k;
		last = (int)k;
	}
	point = otlp_enc__begin(e, 1, "dataPoints", true);
	otlp_enc__fixed64(e, 2, "startTimeUnixNano", p->start_unix_ns);
	otlp_enc__fixed64(e, 3, "timeUnixNano", now_ns);
	otlp_enc__fixed64(e, 4, "count", count);
	otlp_enc__double(e, 5, "sum", (double)p->busy_ns / 1e9);
	otlp_enc__sint32(e, 6, "scale", HIST_EXP_SCALE);
	otlp_enc__fixed64(e, 7, "zeroCount", p->hist[0]);
	if (first >= 0) {
		/* dense from the first index to the last: the empty ones in between are 0s */
		int index = o->exp_index[first];

		buckets = otlp_enc__begin(e, 8, "positive", false);
		otlp_enc__sint32(e, 1, "offset", index);
		packed = otlp_enc__packed_begin(e, 2, "bucketCounts");
		for (int k = first; k <= last; k++) {
			if (!p->hist[k])
				continue;
			for (; index < o->exp_index[k]; index++)
				otlp_enc__packed_uint64(e, 0);
			/* kernel buckets never share an index (lib/hist.h): one count each */
			otlp_enc__packed_uint64(e, p->hist[k]);
			index++;
		}
		otlp_enc__packed_end(e, packed);
		otlp_enc__end(e, buckets);
	}
	otlp_enc__end(e, point);
	otlp_enc__enum(e, 2, "aggregationTemporality", 2);	/* cumulative */
	otlp_enc__end(e, hist);
	otlp_enc__end(e, metric);
}

static void otlp__proc_metrics(const struct otlp *o, struct otlp_enc *e,
			       const struct otlp_proc *p, __u64 now_ns)
{
	size_t rm = otlp_enc__begin(e, 1, "resourceMetrics", true), sm;
	__u64 t0 = p->start_unix_ns;

	resource__put(e, p->pid, p->comm, p);
	sm = otlp_enc__begin(e, 2, "scopeMetrics", true);
	scope__put(e);
	metric__lag(o, e, p, now_ns);
	metric__sum(e, "loopwatch.loop.iterations", "{iteration}", "Loop iterations.", t0,
		    now_ns, false, p->iterations, 0);
	metric__sum(e, "loopwatch.loop.stalls", "{iteration}",
		    "Iterations at or over the stall threshold (--threshold).", t0, now_ns, false,
		    p->stalls, 0);
	metric__sum(e, "loopwatch.loop.busy.time", "s", "Time the loop was busy (not waiting).",
		    t0, now_ns, true, 0, (double)p->busy_ns / 1e9);
	metric__sum(e, "loopwatch.loop.blocked.time", "s",
		    "Of the busy time, asleep in a blocking call.", t0, now_ns, true, 0,
		    (double)p->blocked_ns / 1e9);
	metric__sum(e, "loopwatch.loop.runq.time", "s",
		    "Of the busy time, runnable but waiting for a CPU.", t0, now_ns, true, 0,
		    (double)p->runq_ns / 1e9);
	otlp_enc__end(e, sm);
	otlp_enc__end(e, rm);
}

/* loopwatch's own resource: what this output and the kernel side lost */
static void otlp__self_metrics(struct otlp *o, struct otlp_enc *e, __u64 now_ns)
{
	struct otlp_counts c;
	size_t rm = otlp_enc__begin(e, 1, "resourceMetrics", true), res, sm;
	__u64 t0 = o->start_unix_ns;

	otlp_sender__counts(o->sender, &c);
	res = otlp_enc__begin(e, 1, "resource", false);
	kv__str(e, 1, "service.name", "loopwatch");
	kv__int(e, 1, "process.pid", getpid());
	kv__str(e, 1, "process.executable.name", "loopwatch");
	otlp_enc__end(e, res);
	sm = otlp_enc__begin(e, 2, "scopeMetrics", true);
	scope__put(e);
	metric__sum(e, "loopwatch.otlp.requests.sent", "{request}",
		    "OTLP requests the receiver accepted.", t0, now_ns, false, c.sent, 0);
	metric__sum(e, "loopwatch.otlp.requests.dropped", "{request}",
		    "OTLP requests dropped: the queue was full, or still full at exit.", t0,
		    now_ns, false, c.dropped, 0);
	metric__sum(e, "loopwatch.otlp.requests.refused", "{request}",
		    "OTLP requests the receiver refused (HTTP 4xx).", t0, now_ns, false,
		    c.refused, 0);
	metric__sum(e, "loopwatch.otlp.requests.retried", "{request}",
		    "OTLP request attempts that failed and were retried.", t0, now_ns, false,
		    c.failures, 0);
	metric__sum(e, "loopwatch.otlp.logs.dropped", "{record}",
		    "Log records dropped: more than fit between two sends.", t0, now_ns, false,
		    o->logs_dropped, 0);
	metric__sum(e, "loopwatch.events.dropped", "{event}",
		    "Kernel events lost to a full ring buffer.", t0, now_ns, false,
		    o->events_dropped, 0);
	otlp_enc__end(e, sm);
	otlp_enc__end(e, rm);
}

static void otlp__push(struct otlp *o, enum otlp_signal sig, struct otlp_enc *e)
{
	void *buf;
	size_t len;

	if (otlp_enc__finish(e, &buf, &len)) {
		otlp_enc__free(e);
		o->logs_dropped += sig == OTLP_LOGS;
		return;
	}
	otlp_enc__free(e);
	otlp_sender__push(o->sender, sig, buf, len);
}

static void otlp__send_metrics(struct otlp *o)
{
	struct otlp_enc e;
	__u64 now_ns = (__u64)(clock__wall() * 1e9);

	if (otlp_enc__init(&e, o->encoding))
		return;
	for (size_t i = 0; i < o->nprocs; i++)
		otlp__proc_metrics(o, &e, o->procs[i], now_ns);
	otlp__self_metrics(o, &e, now_ns);
	otlp__push(o, OTLP_METRICS, &e);
}

static const struct otlp_proc *otlp__find(const struct otlp *o, __u32 pid)
{
	for (size_t i = 0; i < o->nprocs; i++)
		if (o->procs[i]->pid == pid)
			return o->procs[i];
	return NULL;
}

static void log__put(struct otlp_enc *e, const struct otlp_log *l)
{
	char body[1024];
	size_t rec = otlp_enc__begin(e, 2, "logRecords", true), any;	/* ScopeLogs */

	otlp_enc__fixed64(e, 1, "timeUnixNano", l->ts_ns);
	otlp_enc__fixed64(e, 11, "observedTimeUnixNano", (__u64)(clock__wall() * 1e9));
	otlp_enc__enum(e, 2, "severityNumber", (uint32_t)l->severity);
	otlp_enc__string(e, 3, "severityText", l->severity >= 13 ? "WARN" : "INFO");
	if (l->syscall[0])
		snprintf(body, sizeof(body), "%s %s %.1f ms%s%s: %s", l->event, l->syscall,
			 l->duration_ms, l->path[0] ? " on " : "", l->path, l->culprit);
	else
		snprintf(body, sizeof(body), "%s %.1f ms (cpu %.1f, blocked %.1f, runq %.1f, gil %.1f ms): "
			 "%s", l->event, l->duration_ms, l->oncpu_ms, l->blocked_ms, l->runq_ms,
			 l->gil_ms, l->culprit);
	any = otlp_enc__begin(e, 5, "body", false);
	otlp_enc__text(e, 1, "stringValue", body);
	otlp_enc__end(e, any);
	kv__str(e, 6, "loopwatch.event", l->event);
	kv__double(e, 6, "loopwatch.duration_ms", l->duration_ms);
	if (l->cause) {
		kv__str(e, 6, "loopwatch.cause", l->cause);
		kv__double(e, 6, "loopwatch.oncpu_ms", l->oncpu_ms);
		kv__double(e, 6, "loopwatch.blocked_ms", l->blocked_ms);
		kv__double(e, 6, "loopwatch.runq_ms", l->runq_ms);
		kv__double(e, 6, "loopwatch.gil_ms", l->gil_ms);
		kv__double(e, 6, "loopwatch.throttled_ms", l->throttled_ms);
	}
	kv__str(e, 6, "loopwatch.culprit", l->culprit);
	kv__str(e, 6, "loopwatch.syscall", l->syscall);
	kv__str(e, 6, "loopwatch.path", l->path);
	kv__int(e, 6, "thread.id", l->tid);
	kv__str(e, 6, "thread.name", l->thread);
	kv__str(e, 6, "code.stacktrace", l->stack);
	otlp_enc__string(e, 12, "eventName", l->event);
	otlp_enc__end(e, rec);
}

static int log__cmp_pid(const void *a, const void *b)
{
	const struct otlp_log *x = a, *y = b;

	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* One ResourceLogs per process, its records in the order they came. */
static void otlp__send_logs(struct otlp *o)
{
	struct otlp_enc e;

	if (!o->nlogs)
		return;
	if (otlp_enc__init(&e, o->encoding)) {
		o->logs_dropped += o->nlogs;
		o->nlogs = 0;
		return;
	}
	qsort(o->logs, o->nlogs, sizeof(*o->logs), log__cmp_pid);
	for (size_t i = 0; i < o->nlogs;) {
		const struct otlp_log *l = &o->logs[i];
		size_t rl = otlp_enc__begin(&e, 1, "resourceLogs", true), sl;

		resource__put(&e, l->pid, l->comm, otlp__find(o, l->pid));
		sl = otlp_enc__begin(&e, 2, "scopeLogs", true);
		scope__put(&e);
		for (; i < o->nlogs && o->logs[i].pid == l->pid; i++)
			log__put(&e, &o->logs[i]);
		otlp_enc__end(&e, sl);
		otlp_enc__end(&e, rl);
	}
	o->nlogs = 0;
	otlp__push(o, OTLP_LOGS, &e);
}

/* loopwatch's own Prometheus metrics learn what the sender counted since last time */
static void otlp__count_self(struct otlp *o)
{
	struct otlp_counts c;

	if (!o->reg)
		return;
	otlp_sender__counts(o->sender, &c);
	prom_registry__count(o->reg, PROM_SELF_OTLP_SENT, c.sent - o->counted.sent);
	prom_registry__count(o->reg, PROM_SELF_OTLP_DROPPED, c.dropped - o->counted.dropped);
	prom_registry__count(o->reg, PROM_SELF_OTLP_REFUSED, c.refused - o->counted.refused);
	prom_registry__count(o->reg, PROM_SELF_OTLP_RETRIED, c.failures - o->counted.failures);
	o->counted = c;
}

static double otlp__due(const struct sink *s)
{
	const struct otlp *o = s->priv;

	return o->next_s;
}

/* At --otlp-interval, whatever -i is: the model's loops and aggregates just drained. */
static int otlp__flush(struct sink *s, const struct model *m, double now)
{
	struct otlp *o = s->priv;

	otlp__update(o, m, now);
	otlp__count_self(o);
	otlp__send_logs(o);
	otlp__send_metrics(o);
	while (o->next_s <= now)
		o->next_s += o->interval_s;
	return 0;
}

/* The frames of one stack, leaf first, one a line. */
static void stack__text(const struct stack_report *st, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int i = 0; st && i < st->nframes && used + 1 < len; i++) {
		int n = frame__format(&st->frames[i], buf + used, len - used - 1);

		if (n < 0)
			break;
		used += (size_t)n < len - used - 1 ? (size_t)n : len - used - 1;
		buf[used++] = '\n';
		buf[used] = '\0';
	}
	if (used && buf[used - 1] == '\n')
		buf[used - 1] = '\0';
}

static struct otlp_log *otlp__log(struct otlp *o)
{
	struct otlp_log *l;

	if (o->nlogs == OTLP_MAX_LOGS) {
		o->logs_dropped++;
		return NULL;
	}
	l = &o->logs[o->nlogs++];
	memset(l, 0, sizeof(*l));
	return l;
}

/* the stack that holds most of the stall's time */
static const struct stack_report *stall__main_stack(const struct stall_report *r)
{
	struct stack_share shares[STALL_SHARES_MAX];
	int n = stall_report__shares(r, shares), best = -1;

	for (int i = 0; i < n; i++)
		if (shares[i].stack >= 0 && (best < 0 || shares[i].ns > shares[best].ns))
			best = i;
	return best >= 0 ? &r->stacks[shares[best].stack] : NULL;
}

static void log__stall(struct otlp_log *l, const struct stall_report *r, const char *event)
{
	l->ts_ns = (__u64)(r->ts * 1e9);
	l->pid = r->pid;
	l->tid = r->tid;
	snprintf(l->comm, sizeof(l->comm), "%s", r->comm);
	snprintf(l->thread, sizeof(l->thread), "%s", r->thread);
	l->event = event;
	l->severity = 13;	/* WARN */
	l->duration_ms = (double)r->duration_ns / 1e6;
	l->oncpu_ms = (double)r->oncpu_ns / 1e6;
	l->blocked_ms = (double)r->blocked_ns / 1e6;
	l->runq_ms = (double)r->runq_ns / 1e6;
	l->gil_ms = (double)r->gil_ns / 1e6;
	l->throttled_ms = (double)r->throttled_ns / 1e6;
	l->cause = stall_cause__name(r->cause);
	snprintf(l->culprit, sizeof(l->culprit), "%s", r->top);
	stack__text(stall__main_stack(r), l->stack, sizeof(l->stack));
}

static void otlp__stall(struct sink *s, const struct stall_report *r)
{
	struct otlp_log *l = otlp__log(s->priv);

	if (l)
		log__stall(l, r, "stall");
}

static void otlp__stuck(struct sink *s, const struct stuck_report *r)
{
	struct otlp_log *l = otlp__log(s->priv);

	if (!l)
		return;
	log__stall(l, &r->so_far, "stuck");
	l->severity = 17;	/* ERROR: the loop is not coming back */
	l->ts_ns = (__u64)(r->now_ts * 1e9);
	if (r->in_call) {
		snprintf(l->syscall, sizeof(l->syscall), "%s", r->call.syscall);
		snprintf(l->path, sizeof(l->path), "%s", r->call.path);
		if (r->call.stack.nframes)
			stack__text(&r->call.stack, l->stack, sizeof(l->stack));
	}
}

static void otlp__block(struct sink *s, const struct block_report *r)
{
	struct otlp_log *l = otlp__log(s->priv);

	if (!l)
		return;
	l->ts_ns = (__u64)(r->ts * 1e9);
	l->pid = r->pid;
	l->tid = r->tid;
	snprintf(l->comm, sizeof(l->comm), "%s", r->comm);
	l->event = "blocking_call";
	l->severity = 9;	/* INFO */
	l->duration_ms = (double)r->duration_ns / 1e6;
	snprintf(l->syscall, sizeof(l->syscall), "%s", r->syscall);
	snprintf(l->path, sizeof(l->path), "%s", r->path);
	stack_report__top(&r->stack, l->culprit, sizeof(l->culprit));
	stack__text(&r->stack, l->stack, sizeof(l->stack));
}

static int otlp__summary(struct sink *s, const struct model *m, double ts)
{
	struct otlp *o = s->priv;
	struct otlp_counts c;

	(void)ts;
	otlp__update(o, m, clock__mono());
	otlp__send_logs(o);
	otlp__send_metrics(o);
	otlp_sender__free(o->sender, OTLP_EXIT_WAIT_S, &c);
	o->sender = NULL;
	if (!o->quiet || c.dropped)
		fprintf(stderr, "loopwatch: --otlp: %llu requests sent, %llu dropped, %llu refused, "
			"%llu attempts retried, %llu log records dropped\n",
			(unsigned long long)c.sent, (unsigned long long)c.dropped,
			(unsigned long long)c.refused, (unsigned long long)c.failures,
			(unsigned long long)o->logs_dropped);
	return 0;
}

static void otlp__close(struct sink *s)
{
	struct otlp *o = s->priv;

	if (!o)
		return;
	otlp_sender__free(o->sender, 0, NULL);
	if (o->reg)
		prom_registry__put(o->reg);
	for (size_t i = 0; i < o->nprocs; i++)
		free(o->procs[i]);
	for (size_t i = 0; i < o->nthreads; i++)
		free(o->threads[i]);
	free(o->procs);
	free(o->threads);
	free(o->logs);
	free(o);
}

const struct sink_ops otlp_sink = {
	.name = "OTLP exporter",
	.wanted = otlp__wanted,
	.open = otlp__open,
	.start = otlp__start,
	.due = otlp__due,
	.flush = otlp__flush,
	.stall = otlp__stall,
	.block = otlp__block,
	.stuck = otlp__stuck,
	.summary = otlp__summary,
	.close = otlp__close,
};
