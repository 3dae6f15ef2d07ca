// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* JSON lines: one object per loop thread per interval, per event, per summary row. */
#include <stdlib.h>
#include "lib/jsonw.h"
#include "sinks/stream.h"
#include "sinks/sink.h"

static bool json__wanted(const struct sink_config *cfg)
{
	return cfg->json;
}

static int json__open(struct sink *s, const struct sink_config *cfg, char *err, size_t errlen)
{
	s->priv = stream__new(cfg->out, "stdout", err, errlen);
	return s->priv ? 0 : -1;
}

static FILE *json__out(const struct sink *s)
{
	const struct stream *st = s->priv;

	return st->f;
}

static void loop_view__json(FILE *out, const char *type, double ts,
			    const struct loop_thread *t, const struct loop_view *v)
{
	__u64 off_ns = v->blocked_ns + v->runq_ns + v->gil_ns;

	fprintf(out, "{\"type\":\"%s\",\"ts\":%.3f,\"pid\":%u,\"tid\":%u,\"comm\":", type, ts,
		t->pid, t->tid);
	json__string(out, t->comm);
	fputs(",\"thread\":", out);
	json__string(out, t->thread);
	/* what an event arriving at a random moment waits, then per iteration (lag_ms) */
	fprintf(out, ",\"arrival_lag_ms\":{\"p50\":%.3f,\"p90\":%.3f,\"p99\":%.3f,"
		"\"max\":%.3f},\"window_ms\":%.3f,\"stall_share\":%.5f",
		json__ms(v->arrival.p50_ns), json__ms(v->arrival.p90_ns),
		json__ms(v->arrival.p99_ns), json__ms(v->arrival.max_ns),
		json__ms(v->arrival.span_ns), v->arrival.over_share);
	fprintf(out, ",\"iterations\":%llu,\"busy_ms\":%.3f,\"idle_ms\":%.3f,"
		"\"oncpu_ms\":%.3f,\"blocked_ms\":%.3f,\"runq_ms\":%.3f,\"throttled_ms\":%.3f,"
		"\"gil_ms\":%.3f,\"busy_now_ms\":%.3f,\"utilization\":%.4f,\"lag_ms\":{\"p50\":%.3f,\"p90\":%.3f,\"p99\":%.3f,"
		"\"p999\":%.3f,\"max\":%.3f}}\n",
		(unsigned long long)v->iterations, json__ms(v->busy_ns), json__ms(v->idle_ns),
		json__ms(v->busy_ns > off_ns ? v->busy_ns - off_ns : 0), json__ms(v->blocked_ns),
		json__ms(v->runq_ns), json__ms(v->throttled_ns), json__ms(v->gil_ns),
		json__ms(t->busy_now_ns),
		loop_view__utilization(v),
		json__ms(v->lag.p50_ns),
		json__ms(v->lag.p90_ns), json__ms(v->lag.p99_ns), json__ms(v->lag.p999_ns),
		json__ms(v->lag.max_ns));
}

static void causes__json(FILE *out, const char *name, const __u64 *ns)
{
	fprintf(out, ",\"%s\":{\"cpu\":%.3f,\"blocked\":%.3f,\"runq\":%.3f}", name,
		json__ms(ns[CAUSE_CPU]), json__ms(ns[CAUSE_BLOCKED]), json__ms(ns[CAUSE_RUNQ]));
}

/* Stall time by function (model/attribution.h), of the last interval or of the run. */
static void functions__json(FILE *out, const struct model *m, double ts, bool interval)
{
	size_t n;
	const struct func_stat **v = attribution__sorted(m->attr, interval, FUNC_SORT_INCL, 0, &n);

	for (size_t i = 0; v && i < n; i++) {
		const struct func_stat *f = v[i];
		const struct func_times *t = interval ? &f->interval : &f->run;
		__u64 busy = model__process_busy_ns(m, f->pid, interval);

		fprintf(out, "{\"type\":\"%s\",\"ts\":%.3f,\"pid\":%u,\"comm\":",
			interval ? "function_interval" : "function_summary", ts, f->pid);
		json__string(out, f->comm);
		fprintf(out, ",\"kind\":\"%s\",\"func\":", f->kind == FRAME_PYTHON ? "python" :
			f->kind == FRAME_JS ? "js" : "native");
		json__string(out, f->func);
		fputs(f->kind == FRAME_PYTHON || f->kind == FRAME_JS ? ",\"file\":" : ",\"module\":",
		      out);
		json__string(out, f->where);
		if (f->kind == FRAME_PYTHON || f->kind == FRAME_JS)
			fprintf(out, ",\"line\":%d", f->line);
		causes__json(out, "self_ms", t->self_ns);
		causes__json(out, "incl_ms", t->incl_ns);
		fprintf(out, ",\"busy_share\":%.4f,\"stalls\":%llu,\"via\":",
			busy ? (double)func_times__self(t) / (double)busy : 0.0,
			(unsigned long long)f->stalls);
		json__string(out, f->via);
		fputs("}\n", out);
	}
	free(v);
}

/* Stalls, blocking and probed calls the kernel could not send up: the ring buffer was full. */
static void dropped__json(FILE *out, double ts, __u64 events, __u64 total)
{
	fprintf(out, "{\"type\":\"dropped\",\"ts\":%.3f,\"events\":%llu,\"total\":%llu}\n", ts,
		(unsigned long long)events, (unsigned long long)total);
}

static void json__interval(struct sink *s, const struct model *m, double ts)
{
	FILE *out = json__out(s);
	size_t n;
	struct loop_thread **v = model__sorted(m, false, &n);

	for (size_t i = 0; v && i < n; i++)
		loop_view__json(out, "interval", ts, v[i], &v[i]->interval);
	free(v);
	functions__json(out, m, ts, true);
	if (m->interval_dropped)
		dropped__json(out, ts, m->interval_dropped, m->events_dropped);
	stream__flush(s->priv);
}

static void syscalls__json(FILE *out, const struct model *m, double ts)
{
	for (size_t i = 0; i < m->nsyscalls; i++) {
		const struct syscall_agg *a = &m->syscalls[i];

		fprintf(out, "{\"type\":\"syscall_summary\",\"ts\":%.3f,\"pid\":%u,\"comm\":",
			ts, a->pid);
		json__string(out, a->comm);
		fputs(",\"syscall\":", out);
		json__string(out, a->name);
		fprintf(out, ",\"count\":%llu,\"blocked_ms\":%.3f,\"ms\":{\"p50\":%.3f,"
			"\"p99\":%.3f,\"max\":%.3f}}\n", (unsigned long long)a->count,
			json__ms(a->total_ns), json__ms(a->lat.p50_ns), json__ms(a->lat.p99_ns),
			json__ms(a->lat.max_ns));
	}
}

static void probes__json(FILE *out, const struct model *m, double ts)
{
	for (size_t i = 0; i < m->nprobes; i++) {
		const struct probe_agg *a = &m->probes[i];

		fprintf(out, "{\"type\":\"probe_summary\",\"ts\":%.3f,\"pid\":%u,\"comm\":",
			ts, a->pid);
		json__string(out, a->comm);
		fputs(",\"probe\":", out);
		json__string(out, a->label);
		fprintf(out, ",\"calls\":%llu,\"total_ms\":%.3f,\"busy_ms\":%.3f,"
			"\"busy_share\":%.4f,\"ms\":{\"p50\":%.3f,\"p90\":%.3f,\"p99\":%.3f,"
			"\"p999\":%.3f,\"max\":%.3f}}\n", (unsigned long long)a->calls,
			json__ms(a->total_ns), json__ms(a->busy_ns), a->busy_share,
			json__ms(a->lat.p50_ns), json__ms(a->lat.p90_ns), json__ms(a->lat.p99_ns),
			json__ms(a->lat.p999_ns), json__ms(a->lat.max_ns));
	}
}

/* A failed write anywhere in the run makes the exit status non-zero. */
static int json__summary(struct sink *s, const struct model *m, double ts)
{
	FILE *out = json__out(s);
	struct loop_view sum;
	size_t n;
	struct loop_thread **v;

	if (m->events_dropped)
		dropped__json(out, ts, m->events_dropped - m->dropped_at_interval, m->events_dropped);
	syscalls__json(out, m, ts);
	probes__json(out, m, ts);
	functions__json(out, m, ts, false);
	v = model__sorted(m, true, &n);
	for (size_t i = 0; v && i < n; i++) {
		loop_thread__summary(v[i], &sum);
		loop_view__json(out, "summary", ts, v[i], &sum);
	}
	free(v);
	return stream__flush(s->priv);
}

static void frame__json(FILE *out, const struct frame *f)
{
	static const char *const kinds[] = { "native", "kernel", "python", "jit", "js" };
	static const char *const unwinds[] = { [FRAME_UNWIND_FP] = "fp",
					       [FRAME_UNWIND_SCAN] = "scan" };

	fprintf(out, "{\"kind\":\"%s\",\"func\":", kinds[f->kind <= FRAME_JS ? f->kind : 0]);
	json__string(out, f->func[0] ? f->func : "[unknown]");
	if (f->func_raw[0]) {
		fputs(",\"func_raw\":", out);
		json__string(out, f->func_raw);
	}
	/* found without CFI: a frame pointer, or a return address among the stack's words */
	if (f->unwind == FRAME_UNWIND_FP || f->unwind == FRAME_UNWIND_SCAN)
		fprintf(out, ",\"unwind\":\"%s\"", unwinds[f->unwind]);
	if (f->kind == FRAME_JS) {
		fputs(",\"file\":", out);
		json__string(out, f->file);
		fprintf(out, ",\"line\":%d,\"column\":%d", f->line, f->column);
		if (f->line_inexact)
			fputs(",\"line_exact\":false", out);
		if (f->tier) {
			fputs(",\"tier\":", out);
			json__string(out, f->tier);
		}
		fputc('}', out);
		return;
	}
	if (f->kind == FRAME_PYTHON || (f->kind == FRAME_JIT && (f->file[0] || f->line))) {
		fputs(",\"file\":", out);
		json__string(out, f->file);
		fprintf(out, ",\"line\":%d", f->line);
		if (f->column)
			fprintf(out, ",\"column\":%d", f->column);
		fputc('}', out);
		return;
	}
	fprintf(out, ",\"offset\":%llu,\"module\":", (unsigned long long)f->offset);
	json__string(out, f->module);
	fputc('}', out);
}

static void json__frames(FILE *out, const struct stack_report *s)
{
	fputc('[', out);
	for (int i = 0; i < s->nframes; i++) {
		if (i)
			fputc(',', out);
		frame__json(out, &s->frames[i]);
	}
	fputc(']', out);
}

/* ,"stacks":[...] of a stall: CPU sample stacks, blocking calls, where it waited for a CPU */
static void stacks__json(FILE *out, const struct stall_report *r)
{
	fputs(",\"stacks\":[", out);
	for (int i = 0; i < r->nstacks; i++) {
		const struct stack_report *s = &r->stacks[i];

		fprintf(out, "%s{\"samples\":%d,\"cause\":\"%s\"", i ? "," : "", s->samples,
			s->gil ? "gil" : s->blocked ? "blocked" : s->runq ? "runq" : "cpu");
		if (s->runq)
			fprintf(out, ",\"ms\":%.3f", json__ms(s->ns));
		if (s->blocked) {
			fputs(",\"syscall\":", out);
			json__string(out, s->syscall);
			fprintf(out, ",\"ms\":%.3f", json__ms(s->ns));
		}
		fputs(",\"frames\":", out);
		json__frames(out, s);
		fputc('}', out);
	}
	fputc(']', out);
}

/*
 * Of the run-queue time, the cgroup's CPU quota's, and the quota when known;
 * who had the CPU meanwhile; who woke it from its sleeps.
 */
static void json__throttled(FILE *out, const struct stall_report *r)
{
	const struct cpu_limit *l = &r->limit;

	fprintf(out, ",\"throttled_ms\":%.3f,\"neighbours\":[", json__ms(r->throttled_ns));
	for (int i = 0; i < r->nneighbours; i++) {
		fprintf(out, "%s{\"tid\":%u,\"pid\":%u,\"comm\":", i ? "," : "",
			r->neighbours[i].tid, r->neighbours[i].pid);
		json__string(out, r->neighbours[i].comm);
		fprintf(out, ",\"ms\":%.3f}", json__ms(r->neighbours[i].ns));
	}
	fputs("],\"wakers\":[", out);
	for (int i = 0; i < r->nwakers; i++) {
		fprintf(out, "%s{\"tid\":%u,\"pid\":%u,\"comm\":", i ? "," : "",
			r->wakers[i].tid, r->wakers[i].pid);
		json__string(out, r->wakers[i].comm);
		fprintf(out, ",\"ms\":%.3f,\"top\":", json__ms(r->wakers[i].ns));
		json__string(out, r->wakers[i].top);
		fputc('}', out);
	}
	fprintf(out, "],\"gil_ms\":%.3f,\"gil_holders\":[", json__ms(r->gil_ns));
	for (int i = 0; i < r->ngil_holders; i++) {
		const struct gil_holder_report *h = &r->gil_holders[i];
		char top[sizeof(r->top)] = "";

		if (h->stack >= 0 && h->stack < r->nstacks)
			stack_report__top(&r->stacks[h->stack], top, sizeof(top));
		fprintf(out, "%s{\"tid\":%u,\"pid\":%u,\"comm\":", i ? "," : "", h->tid, r->pid);
		json__string(out, h->comm);
		fprintf(out, ",\"ms\":%.3f,\"samples\":%u,\"top\":", json__ms(h->ns), h->samples);
		json__string(out, top);
		fputc('}', out);
	}
	fputc(']', out);
	if (!l->known)
		return;
	fputs(",\"throttle\":{\"cgroup\":", out);
	json__string(out, l->cgroup);
	fprintf(out, ",\"quota_ms\":%.3f,\"period_ms\":%.3f}", (double)l->quota_us / 1e3,
		(double)l->period_us / 1e3);
}

static void json__stall(struct sink *snk, const struct stall_report *r)
{
	FILE *out = json__out(snk);

	fprintf(out, "{\"type\":\"stall\",\"ts\":%.6f,\"pid\":%u,\"tid\":%u,\"comm\":",
		r->ts, r->pid, r->tid);
	json__string(out, r->comm);
	fputs(",\"thread\":", out);
	json__string(out, r->thread);
	fprintf(out, ",\"duration_ms\":%.3f,\"oncpu_ms\":%.3f,\"blocked_ms\":%.3f,"
		"\"runq_ms\":%.3f,\"cause\":\"%s\",\"top\":",
		json__ms(r->duration_ns), json__ms(r->oncpu_ns), json__ms(r->blocked_ns),
		json__ms(r->runq_ns), stall_cause__name(r->cause));
	json__string(out, r->top);
	json__throttled(out, r);
	fputs(",\"syscalls\":[", out);
	for (int i = 0; i < r->nsyscalls; i++) {
		fprintf(out, "%s{\"name\":", i ? "," : "");
		json__string(out, r->syscalls[i].name);
		fprintf(out, ",\"count\":%u,\"ms\":%.3f}", r->syscalls[i].count,
			json__ms(r->syscalls[i].ns));
	}
	fputs("],\"probes\":[", out);
	for (int i = 0; i < r->nprobes; i++) {
		fprintf(out, "%s{\"probe\":", i ? "," : "");
		json__string(out, r->probes[i].label);
		fprintf(out, ",\"count\":%u,\"ms\":%.3f}", r->probes[i].count,
			json__ms(r->probes[i].ns));
	}
	fputs("]", out);
	stacks__json(out, r);
	fputs("}\n", out);
	stream__flush(snk->priv);
}

static void json__block(struct sink *s, const struct block_report *r)
{
	FILE *out = json__out(s);

	fprintf(out, "{\"type\":\"blocking_call\",\"ts\":%.6f,\"pid\":%u,\"tid\":%u,"
		"\"comm\":", r->ts, r->pid, r->tid);
	json__string(out, r->comm);
	fputs(",\"syscall\":", out);
	json__string(out, r->syscall);
	fprintf(out, ",\"duration_ms\":%.3f,\"sleeps\":%u", json__ms(r->duration_ns), r->sleeps);
	if (r->fd >= 0) {
		fprintf(out, ",\"fd\":%d,\"path\":", r->fd);
		json__string(out, r->path);
	}
	if (r->wait_nfds) {
		fputs(",\"fds\":[", out);
		for (__u32 i = 0; i < r->wait_nfds && i < LW_WAIT_FDS; i++)
			fprintf(out, "%s%d", i ? "," : "", r->wait_fds[i]);
		fprintf(out, "],\"nfds\":%u", r->wait_nfds);
	}
	fputs(",\"stack\":", out);
	json__frames(out, &r->stack);
	fputs("}\n", out);
	stream__flush(s->priv);
}

static void json__probe(struct sink *s, const struct probe_report *r)
{
	FILE *out = json__out(s);

	fprintf(out, "{\"type\":\"probe_call\",\"ts\":%.6f,\"pid\":%u,\"tid\":%u,\"comm\":",
		r->ts, r->pid, r->tid);
	json__string(out, r->comm);
	fputs(",\"probe\":", out);
	json__string(out, r->label);
	fprintf(out, ",\"duration_ms\":%.3f,\"stack\":", json__ms(r->duration_ns));
	json__frames(out, &r->stack);
	fputs("}\n", out);
	stream__flush(s->priv);
}

static void json__stuck(struct sink *snk, const struct stuck_report *k)
{
	const struct stall_report *r = &k->so_far;
	FILE *out = json__out(snk);

	fprintf(out, "{\"type\":\"stuck\",\"ts\":%.6f,\"start_ts\":%.6f,\"pid\":%u,"
		"\"tid\":%u,\"comm\":", k->now_ts, r->ts, r->pid, r->tid);
	json__string(out, r->comm);
	fputs(",\"thread\":", out);
	json__string(out, r->thread);
	fprintf(out, ",\"report\":%d,\"busy_ms\":%.3f,\"oncpu_ms\":%.3f,\"blocked_ms\":%.3f,"
		"\"runq_ms\":%.3f,\"gil_ms\":%.3f,\"cause\":\"%s\",\"top\":", k->nth,
		json__ms(r->duration_ns), json__ms(r->oncpu_ns), json__ms(r->blocked_ns),
		json__ms(r->runq_ns), json__ms(r->gil_ns), stall_cause__name(r->cause));
	json__string(out, r->top);
	if (k->in_call) {
		fputs(",\"syscall\":", out);
		json__string(out, k->call.syscall);
		fprintf(out, ",\"syscall_ms\":%.3f", json__ms(k->call.duration_ns));
		if (k->call.fd >= 0) {
			fprintf(out, ",\"fd\":%d,\"path\":", k->call.fd);
			json__string(out, k->call.path);
		}
	}
	stacks__json(out, r);
	fputs("}\n", out);
	stream__flush(snk->priv);
}

static void json__close(struct sink *s)
{
	free(s->priv);
}

/* A pipe's reader gone (`| head`) ends the run within a poll, not at the next write. */
static int json__pollfds(struct sink *s, struct pollfd *fds, int max)
{
	return max > 0 ? stream__pollfd(s->priv, fds) : 0;
}

static bool json__ready(struct sink *s, const struct pollfd *fd)
{
	return stream__ready(s->priv, fd);
}

const struct sink_ops json_sink = {
	.name = "JSON output",
	.wanted = json__wanted,
	.open = json__open,
	.interval = json__interval,
	.stall = json__stall,
	.block = json__block,
	.probe = json__probe,
	.stuck = json__stuck,
	.summary = json__summary,
	.close = json__close,
	.pollfds = json__pollfds,
	.ready = json__ready,
};
