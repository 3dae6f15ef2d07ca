// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A timeline in the Chrome Trace Event format (JSON object form), which
 * Perfetto's UI and trace processor and chrome://tracing load: one track
 * per loop thread, each stall a slice with its cause breakdown and stacks in
 * args, its blocking calls and probed calls nested in it, hung loops as
 * instant events. Kept in memory as a ring of the last TRACE_WINDOW_S
 * seconds (and at most TRACE_MAX_EVENTS events), written whole at exit and
 * on SIGUSR1.
 */
#include <stdlib.h>
#include <string.h>
#include "lib/jsonw.h"
#include "sinks/outfile.h"
#include "sinks/sink.h"

#define TRACE_WINDOW_S 600.0
#define TRACE_MAX_EVENTS 100000
#define TRACE_MAX_THREADS 4096
/* in args: the heaviest stacks of a stall, each cut to its leaf-most frames */
#define TRACE_STACKS 8
#define TRACE_FRAMES 32

enum trace_kind { TRACE_STALL, TRACE_BLOCK, TRACE_PROBE, TRACE_STUCK, TRACE_GIL };

struct trace_event {
	enum trace_kind kind;
	__u32 pid;
	__u32 tid;
	double ts_us;		/* unix time, microseconds */
	double dur_us;
	__u32 waiter;		/* TRACE_GIL: the loop thread it held the GIL from (a flow arrow) */
	char name[96];
	char *args;		/* a JSON object, rendered when the event came */
};

struct trace_thread {
	__u32 pid;
	__u32 tid;
	char comm[LW_COMM_LEN];
	char thread[LW_COMM_LEN];
};

struct trace {
	struct outfile file;
	struct trace_event *ring;
	size_t head;		/* next slot */
	size_t count;
	__u64 dropped;		/* pushed out of the ring by its size */
	struct trace_thread threads[TRACE_MAX_THREADS];
	size_t nthreads;
};

static bool trace__wanted(const struct sink_config *cfg)
{
	return cfg->trace != NULL;
}

static void trace__free(struct trace *t)
{
	for (size_t i = 0; t->ring && i < TRACE_MAX_EVENTS; i++)
		free(t->ring[i].args);
	free(t->ring);
	outfile__free(&t->file);
	free(t);
}

static int trace__open(struct sink *s, const struct sink_config *cfg, char *err, size_t errlen)
{
	struct trace *t = calloc(1, sizeof(*t));

	if (!t || !(t->ring = calloc(TRACE_MAX_EVENTS, sizeof(*t->ring)))) {
		snprintf(err, errlen, "out of memory");
		free(t);
		return -1;
	}
	if (outfile__init(&t->file, cfg->trace, "--trace", 0, err, errlen)) {
		trace__free(t);
		return -1;
	}
	s->priv = t;
	return 0;
}

/* Names for the tracks: the thread's, once a stall told them, else the process's. */
static void trace__thread(struct trace *t, __u32 pid, __u32 tid, const char *comm,
			  const char *thread)
{
	struct trace_thread *th = NULL;

	for (size_t i = 0; i < t->nthreads && !th; i++) {
		if (t->threads[i].tid == tid && t->threads[i].pid == pid)
			th = &t->threads[i];
	}
	if (!th) {
		if (t->nthreads >= TRACE_MAX_THREADS)
			return;
		th = &t->threads[t->nthreads++];
		th->pid = pid;
		th->tid = tid;
	}
	memcpy(th->comm, comm, LW_COMM_LEN);
	if (thread)
		memcpy(th->thread, thread, LW_COMM_LEN);
}

/* The event's slot in the ring, the oldest given up when it is full; args owned. */
static struct trace_event *trace__push(struct trace *t, enum trace_kind kind, __u32 pid, __u32 tid,
			double ts, __u64 dur_ns, const char *name, char *args)
{
	struct trace_event *e = &t->ring[t->head];

	if (t->count == TRACE_MAX_EVENTS) {
		free(e->args);
		t->dropped++;
	} else {
		t->count++;
	}
	*e = (struct trace_event){ .kind = kind, .pid = pid, .tid = tid, .ts_us = ts * 1e6,
				   .dur_us = (double)dur_ns / 1e3, .args = args };
	snprintf(e->name, sizeof(e->name), "%s", name);
	t->head = (t->head + 1) % TRACE_MAX_EVENTS;
	return e;
}

/* ["func (module)", ...] leaf first, cut to TRACE_FRAMES */
static void frames__json(FILE *out, const struct stack_report *s)
{
	char buf[512];

	fputc('[', out);
	for (int i = 0; i < s->nframes && i < TRACE_FRAMES; i++) {
		frame__format(&s->frames[i], buf, sizeof(buf));
		if (i)
			fputc(',', out);
		json__string(out, buf);
	}
	fputc(']', out);
}

static int stack__weight_cmp(const void *a, const void *b)
{
	const struct stack_report *x = *(const struct stack_report *const *)a;
	const struct stack_report *y = *(const struct stack_report *const *)b;
	__u64 wx = x->samples ? stack_report__sample_weight(x) * 1000 : x->ns;
	__u64 wy = y->samples ? stack_report__sample_weight(y) * 1000 : y->ns;

	return wx < wy ? 1 : wx > wy ? -1 : 0;
}

static void stacks__json(FILE *out, const struct stall_report *r)
{
	const struct stack_report *v[REPORT_MAX_STACKS];
	int n = 0;

	for (int i = 0; i < r->nstacks; i++)
		v[n++] = &r->stacks[i];
	qsort(v, (size_t)n, sizeof(*v), stack__weight_cmp);
	fputs(",\"stacks\":[", out);
	for (int i = 0; i < n && i < TRACE_STACKS; i++) {
		fprintf(out, "%s{\"cause\":\"%s\"", i ? "," : "",
			v[i]->gil ? "gil" : v[i]->blocked ? "blocked" : v[i]->runq ? "runq" : "cpu");
		if (v[i]->samples)
			fprintf(out, ",\"samples\":%d", v[i]->samples);
		else
			fprintf(out, ",\"ms\":%.3f", json__ms(v[i]->ns));
		if (v[i]->blocked) {
			fputs(",\"syscall\":", out);
			json__string(out, v[i]->syscall);
		}
		fputs(",\"frames\":", out);
		frames__json(out, v[i]);
		fputc('}', out);
	}
	fputc(']', out);
}

static void stall__args(FILE *out, const struct stall_report *r)
{
	fprintf(out, "{\"duration_ms\":%.3f,\"oncpu_ms\":%.3f,\"blocked_ms\":%.3f,"
		"\"runq_ms\":%.3f,\"throttled_ms\":%.3f,\"gil_ms\":%.3f,\"cause\":\"%s\",\"top\":",
		json__ms(r->duration_ns), json__ms(r->oncpu_ns), json__ms(r->blocked_ns),
		json__ms(r->runq_ns), json__ms(r->throttled_ns), json__ms(r->gil_ns),
		stall_cause__name(r->cause));
	json__string(out, r->top);
	fputs(",\"syscalls\":{", out);
	for (int i = 0; i < r->nsyscalls; i++) {
		if (i)
			fputc(',', out);
		json__string(out, r->syscalls[i].name);
		fprintf(out, ":%.3f", json__ms(r->syscalls[i].ns));
	}
	fputs("},\"probes\":{", out);
	for (int i = 0; i < r->nprobes; i++) {
		if (i)
			fputc(',', out);
		json__string(out, r->probes[i].label);
		fprintf(out, ":%.3f", json__ms(r->probes[i].ns));
	}
	/* who held the GIL it waited for: "cruncher1[1234]": ms */
	fputs("},\"gil_holders\":{", out);
	for (int i = 0; i < r->ngil_holders; i++) {
		char who[LW_COMM_LEN + 16];

		snprintf(who, sizeof(who), "%s[%u]", r->gil_holders[i].comm, r->gil_holders[i].tid);
		if (i)
			fputc(',', out);
		json__string(out, who);
		fprintf(out, ":%.3f", json__ms(r->gil_holders[i].ns));
	}
	fputc('}', out);
	stacks__json(out, r);
	fputc('}', out);
}

/* A JSON object rendered by fn into a malloc'ed string; NULL when out of memory. */
#define ARGS(var, ...)								\
	do {									\
		size_t len_;							\
		FILE *out_ = open_memstream(&(var), &len_);			\
		if (!out_) {							\
			(var) = NULL;						\
			break;							\
		}								\
		__VA_ARGS__;							\
		fclose(out_);							\
	} while (0)

static void trace__stall(struct sink *s, const struct stall_report *r)
{
	struct trace *t = s->priv;
	char name[96], *args;

	ARGS(args, stall__args(out_, r));
	snprintf(name, sizeof(name), "stall %.1f ms (%s)", json__ms(r->duration_ns),
		 stall_cause__name(r->cause));
	trace__thread(t, r->pid, r->tid, r->comm, r->thread);
	trace__push(t, TRACE_STALL, r->pid, r->tid, r->ts, r->duration_ns, name, args);
	/*
	 * The GIL's holders on tracks of their own, over the stall they held it
	 * in (when within it is not known: samples say how long), an arrow each
	 * to the loop's stall
	 */
	for (int i = 0; i < r->ngil_holders; i++) {
		const struct gil_holder_report *h = &r->gil_holders[i];
		char top[256] = "";

		if (h->stack >= 0 && h->stack < r->nstacks)
			stack_report__top(&r->stacks[h->stack], top, sizeof(top));
		ARGS(args, fprintf(out_, "{\"waiter_tid\":%u,\"held_ms\":%.3f,\"samples\":%u,"
				   "\"top\":", r->tid, json__ms(h->ns), h->samples);
		     json__string(out_, top); fputc('}', out_));
		snprintf(name, sizeof(name), "held the GIL %.1f ms of %s[%u]'s stall",
			 json__ms(h->ns), r->thread[0] ? r->thread : r->comm, r->tid);
		trace__thread(t, r->pid, h->tid, r->comm, h->comm);
		trace__push(t, TRACE_GIL, r->pid, h->tid, r->ts, r->duration_ns, name, args)->waiter =
			r->tid;
	}
}

static void block__args(FILE *out, const struct block_report *r)
{
	fputs("{\"syscall\":", out);
	json__string(out, r->syscall);
	fprintf(out, ",\"duration_ms\":%.3f,\"sleeps\":%u", json__ms(r->duration_ns), r->sleeps);
	if (r->fd >= 0) {
		fprintf(out, ",\"fd\":%d,\"path\":", r->fd);
		json__string(out, r->path);
	}
	fputs(",\"frames\":", out);
	frames__json(out, &r->stack);
	fputc('}', out);
}

static void trace__block(struct sink *s, const struct block_report *r)
{
	struct trace *t = s->priv;
	char *args;

	ARGS(args, block__args(out_, r));
	trace__thread(t, r->pid, r->tid, r->comm, NULL);
	trace__push(t, TRACE_BLOCK, r->pid, r->tid, r->ts, r->duration_ns, r->syscall, args);
}

static void probe__args(FILE *out, const struct probe_report *r)
{
	fputs("{\"probe\":", out);
	json__string(out, r->label);
	fprintf(out, ",\"duration_ms\":%.3f,\"frames\":", json__ms(r->duration_ns));
	frames__json(out, &r->stack);
	fputc('}', out);
}

static void trace__probe(struct sink *s, const struct probe_report *r)
{
	struct trace *t = s->priv;
	char *args;

	ARGS(args, probe__args(out_, r));
	trace__thread(t, r->pid, r->tid, r->comm, NULL);
	trace__push(t, TRACE_PROBE, r->pid, r->tid, r->ts, r->duration_ns, r->label, args);
}

static void stuck__args(FILE *out, const struct stuck_report *k)
{
	fprintf(out, "{\"report\":%d,\"started_ts\":%.6f,\"syscall\":", k->nth, k->so_far.ts);
	json__string(out, k->in_call ? k->call.syscall : "");
	fputs(",\"so_far\":", out);
	stall__args(out, &k->so_far);
	fputc('}', out);
}

static void trace__stuck(struct sink *s, const struct stuck_report *k)
{
	struct trace *t = s->priv;
	char name[96], *args;

	ARGS(args, stuck__args(out_, k));
	snprintf(name, sizeof(name), "stuck for %.1f s", (double)k->so_far.duration_ns / 1e9);
	trace__thread(t, k->so_far.pid, k->so_far.tid, k->so_far.comm, k->so_far.thread);
	trace__push(t, TRACE_STUCK, k->so_far.pid, k->so_far.tid, k->now_ts, 0, name, args);
}

static int event__cmp(const void *a, const void *b)
{
	const struct trace_event *x = *(const struct trace_event *const *)a;
	const struct trace_event *y = *(const struct trace_event *const *)b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->ts_us != y->ts_us)
		return x->ts_us < y->ts_us ? -1 : 1;
	/* the enclosing slice first */
	return x->dur_us > y->dur_us ? -1 : x->dur_us < y->dur_us;
}

/*
 * Slices of a thread must nest: a blocking call's end and its stall's are
 * taken at different moments, and a call may outlast its rounded parent by
 * a microsecond. Each slice is cut at the end of the one it starts in.
 */
static void events__nest(struct trace_event **v, size_t n)
{
	double ends[64];
	int depth = 0;

	for (size_t i = 0; i < n; i++) {
		struct trace_event *e = v[i];

		if (i && (v[i - 1]->tid != e->tid || v[i - 1]->pid != e->pid))
			depth = 0;
		if (e->kind == TRACE_STUCK)
			continue;
		while (depth && ends[depth - 1] <= e->ts_us)
			depth--;
		if (depth && e->ts_us + e->dur_us > ends[depth - 1])
			e->dur_us = ends[depth - 1] - e->ts_us;
		if (depth < 64)
			ends[depth++] = e->ts_us + e->dur_us;
	}
}

static const char *const categories[] = {
	[TRACE_STALL] = "stall", [TRACE_BLOCK] = "blocking_call", [TRACE_PROBE] = "probe_call",
	[TRACE_STUCK] = "stuck", [TRACE_GIL] = "gil",
};

/* The separator before every element of traceEvents but the first. */
static void element__begin(FILE *out, bool *first)
{
	fputs(*first ? "\n{" : ",\n{", out);
	*first = false;
}

static void event__write(FILE *out, const struct trace_event *e, bool *first)
{
	element__begin(out, first);
	fputs("\"name\":", out);
	json__string(out, e->name);
	fprintf(out, ",\"cat\":\"%s\",\"ph\":\"%s\",\"ts\":%.3f,", categories[e->kind],
		e->kind == TRACE_STUCK ? "i" : "X", e->ts_us);
	if (e->kind == TRACE_STUCK)
		fputs("\"s\":\"t\",", out);
	else
		fprintf(out, "\"dur\":%.3f,", e->dur_us);
	fprintf(out, "\"pid\":%u,\"tid\":%u,\"args\":%s}", e->pid, e->tid,
		e->args ? e->args : "{}");
	if (e->kind != TRACE_GIL)
		return;
	/* an arrow from the holder's slice to the stall it made the loop wait in */
	element__begin(out, first);
	fprintf(out, "\"name\":\"gil\",\"cat\":\"gil\",\"ph\":\"s\",\"id\":\"%u.%u.%.0f\","
		"\"ts\":%.3f,\"pid\":%u,\"tid\":%u}", e->tid, e->waiter, e->ts_us, e->ts_us + 1,
		e->pid, e->tid);
	element__begin(out, first);
	fprintf(out, "\"name\":\"gil\",\"cat\":\"gil\",\"ph\":\"f\",\"bp\":\"e\","
		"\"id\":\"%u.%u.%.0f\",\"ts\":%.3f,\"pid\":%u,\"tid\":%u}", e->tid, e->waiter,
		e->ts_us, e->ts_us + 1, e->pid, e->waiter);
}

static void threads__write(FILE *out, const struct trace *t, bool *first)
{
	for (size_t i = 0; i < t->nthreads; i++) {
		const struct trace_thread *th = &t->threads[i];
		char name[2 * LW_COMM_LEN + 16];

		element__begin(out, first);
		fprintf(out, "\"name\":\"process_name\",\"cat\":\"__metadata\",\"ph\":\"M\",\"pid\":%u,\"tid\":%u,"
			"\"args\":{\"name\":", th->pid, th->tid);
		snprintf(name, sizeof(name), "%s %u", th->comm, th->pid);
		json__string(out, name);
		fprintf(out, "}},\n{\"name\":\"thread_name\",\"cat\":\"__metadata\",\"ph\":\"M\",\"pid\":%u,\"tid\":%u,"
			"\"args\":{\"name\":", th->pid, th->tid);
		snprintf(name, sizeof(name), "%s %u", th->thread[0] ? th->thread : th->comm,
			 th->tid);
		json__string(out, name);
		fputs("}}", out);
	}
}

/* events_lost: what the kernel could not send up (a full ring buffer), run total */
static int trace__write(struct trace *t, double now, __u64 events_lost)
{
	struct trace_event **v = calloc(t->count + 1, sizeof(*v));
	double from_us = (now - TRACE_WINDOW_S) * 1e6;
	size_t n = 0, old = 0;
	bool first = true;
	FILE *out;

	if (!v)
		return -1;
	for (size_t i = 0; i < t->count; i++) {
		struct trace_event *e = &t->ring[(t->head + TRACE_MAX_EVENTS - t->count + i) %
						 TRACE_MAX_EVENTS];

		if (e->ts_us + e->dur_us >= from_us)
			v[n++] = e;
		else
			old++;
	}
	qsort(v, n, sizeof(*v), event__cmp);
	events__nest(v, n);
	out = outfile__begin(&t->file);
	if (!out) {
		free(v);
		return -1;
	}
	fprintf(out, "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"producer\":\"loopwatch\","
		"\"window_s\":%.0f,\"max_events\":%d,\"events_dropped\":%llu,"
		"\"events_older_than_window\":%zu,\"events_lost_ring_buffer\":%llu},\n"
		"\"traceEvents\":[", TRACE_WINDOW_S, TRACE_MAX_EVENTS,
		(unsigned long long)t->dropped, old, (unsigned long long)events_lost);
	threads__write(out, t, &first);
	for (size_t i = 0; i < n; i++)
		event__write(out, v[i], &first);
	fputs("\n]}\n", out);
	free(v);
	return outfile__commit(&t->file, out);
}

static void trace__snapshot(struct sink *s, const struct model *m, double ts)
{
	trace__write(s->priv, ts, m->events_dropped);
}

static int trace__summary(struct sink *s, const struct model *m, double ts)
{
	struct trace *t = s->priv;

	return trace__write(t, ts, m->events_dropped) || outfile__status(&t->file) ? 1 : 0;
}

static void trace__close(struct sink *s)
{
	if (s->priv)
		trace__free(s->priv);
}

const struct sink_ops trace_sink = {
	.name = "trace",
	.wanted = trace__wanted,
	.open = trace__open,
	.stall = trace__stall,
	.block = trace__block,
	.probe = trace__probe,
	.stuck = trace__stuck,
	.snapshot = trace__snapshot,
	.summary = trace__summary,
	.close = trace__close,
};
