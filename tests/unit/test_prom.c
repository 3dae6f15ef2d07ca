// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The Prometheus sink on hand-built models: exact le buckets, escaping,
 * aggregation, counters that never go back (exit, rename, kernel record
 * restart, LRU eviction, pid reuse), the per-pid grace period, blocking
 * syscalls and probes labelled like their process's loops, and container ids
 * from cgroup paths.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include "check.h"
#include "model/model.h"
#include "lib/cgroup.h"
#include "sinks/promreg.h"

/* pids far above any real one */
#define FAKE_PID 4190000
#define FAKE_MAX 16

static struct lw_loop rec;

/* The kernel's maps as the model drains them: one loop record, the aggregates. */
static struct {
	const struct lw_loop *loop;
	struct lw_syscall_key skeys[FAKE_MAX];
	struct lw_syscall_stats sstats[FAKE_MAX];
	int nsyscalls;
	struct lw_probe_key pkeys[FAKE_MAX];
	struct lw_probe_stats pstats[FAKE_MAX];
	int nprobes;
	const char *labels[FAKE_MAX];	/* by probe id */
	__u64 dropped, loops_full, switch_ins_missed, loops_refused, preemptions, walks;
} fake;

static int fake__loops(void *ctx, void (*fn)(const struct lw_loop *, void *), void *arg)
{
	(void)ctx;
	if (fake.loop)
		fn(fake.loop, arg);
	return fake.loop != NULL;
}

static int fake__syscalls(void *ctx,
			  void (*fn)(const struct lw_syscall_key *, const struct lw_syscall_stats *,
				     void *),
			  void *arg)
{
	(void)ctx;
	for (int i = 0; i < fake.nsyscalls; i++)
		fn(&fake.skeys[i], &fake.sstats[i], arg);
	return fake.nsyscalls;
}

static int fake__probes(void *ctx,
			void (*fn)(const struct lw_probe_key *, const struct lw_probe_stats *,
				   void *),
			void *arg)
{
	(void)ctx;
	for (int i = 0; i < fake.nprobes; i++)
		fn(&fake.pkeys[i], &fake.pstats[i], arg);
	return fake.nprobes;
}

static void fake__counters(void *ctx, __u64 sums[LW_CTR_MAX])
{
	(void)ctx;
	memset(sums, 0, LW_CTR_MAX * sizeof(sums[0]));
	sums[LW_CTR_EVENTS_DROPPED] = fake.dropped;
	sums[LW_CTR_LOOPS_FULL] = fake.loops_full;
	sums[LW_CTR_SWITCH_INS_MISSED] = fake.switch_ins_missed;
	sums[LW_CTR_LOOPS_REFUSED] = fake.loops_refused;
	sums[LW_CTR_PREEMPTIONS] = fake.preemptions;
	sums[LW_CTR_STACK_WALKS] = fake.walks;
}

static void fake__label(void *ctx, __u32 id, char *buf, size_t len)
{
	(void)ctx;
	snprintf(buf, len, "%s", id < FAKE_MAX && fake.labels[id] ? fake.labels[id] : "?");
}

/* no such process: the kernel's names stay, exe and cgroup are unknown */
static bool fake__names(void *ctx, __u32 pid, __u32 tid, char *comm, char *thread)
{
	(void)ctx;
	(void)pid;
	(void)tid;
	(void)comm;
	(void)thread;
	return false;
}

static const struct model_source fake_source = {
	.loops = fake__loops,
	.syscalls = fake__syscalls,
	.probes = fake__probes,
	.counters = fake__counters,
	.probe_label = fake__label,
	.names = fake__names,
};

/* One kernel record into the model, as a drain finds it. */
static void model__ingest(struct model *m, const struct lw_loop *loop)
{
	fake.loop = loop;
	model__drain(m, &fake_source, MODEL_LOOPS);
	fake.loop = NULL;
}

static struct model *model__fresh(void)
{
	memset(&fake, 0, sizeof(fake));
	return model__new(0);
}

/* A kernel record of tid with one iteration per value in busy_ns. */
static const struct lw_loop *record(__u32 pid, __u32 tid, const __u64 *busy_ns, int n)
{
	memset(&rec, 0, sizeof(rec));
	rec.pid = pid;
	rec.tid = tid;
	rec.start_ns = 1000 + tid;
	strcpy(rec.comm, "server");
	strcpy(rec.thread, "loop");
	for (int i = 0; i < n; i++) {
		rec.busy_hist.counts[lw_hist_bucket(busy_ns[i])]++;
		rec.iterations++;
		rec.busy_ns += busy_ns[i];
		rec.idle_ns += 1000000;
	}
	return &rec;
}

static struct loop_thread *thread__find(struct model *m, __u32 tid)
{
	for (size_t i = 0; i < m->nthreads; i++) {
		if (m->threads[i]->tid == tid)
			return m->threads[i];
	}
	return NULL;
}

/* The model forgets a thread, as it does with old exited ones. */
static void model__forget_tid(struct model *m, __u32 tid)
{
	model__forget(m, thread__find(m, tid));
}

/* The flags' defaults, but every thread exported from its first iteration. */
static struct prom_registry *reg__new(bool per_pid)
{
	struct prom_options o = { per_pid, PROM_STALE_S, PROM_MAX_SERIES, 0, false };

	return prom_registry__new(&o);
}

static char *render(struct prom_registry *sp, struct model *m, double now_s)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	prom_registry__render(sp, m, now_s, out);
	fclose(out);
	return text;
}

/* The value of the sample whose name and labels are exactly `series`; -1 if absent. */
static double sample(const char *text, const char *series)
{
	size_t n = strlen(series);

	for (const char *line = text; line && *line; line = strchr(line, '\n')) {
		if (*line == '\n')
			line++;
		if (!strncmp(line, series, n) && line[n] == ' ')
			return strtod(line + n + 1, NULL);
	}
	return -1;
}

#define LBL "comm=\"server\",exe=\"/usr/bin/server\",cgroup=\"/system.slice/server.service\"," \
	    "service=\"server.service\""

static void thread__label(struct model *m, __u32 tid)
{
	struct loop_thread *t = thread__find(m, tid);

	strcpy(t->exe, "/usr/bin/server");
	strcpy(t->cgroup, "/system.slice/server.service");
	/* what the tracker gives with the path: its identity */
	cgroup__identity(t->cgroup, &t->cg);
}

static void test_buckets_exact(void)
{
	const __u64 busy[] = { 900000, 4000000, 20000000, 3000000000ULL, 100 };
	struct model *m = model__fresh();
	struct prom_registry *sp = reg__new(false);
	char *text;

	record(FAKE_PID, FAKE_PID, busy, 5);
	rec.stalls = 2;		/* the kernel counts them: 20 ms and 3 s */
	model__ingest(m, &rec);
	thread__label(m, FAKE_PID);
	fake.dropped = 3;
	fake.loops_full = 4;
	fake.switch_ins_missed = 5;
	fake.loops_refused = 6;
	fake.preemptions = 8;
	fake.walks = 7;
	model__drain(m, &fake_source, MODEL_AGGREGATES);
	text = render(sp, m, 0);
#define B(le) sample(text, "loopwatch_loop_iteration_seconds_bucket{" LBL ",le=\"" le "\"}")
	CHECK(B("0.001") == 2, "le 0.001: %g", B("0.001"));
	CHECK(B("0.005") == 3, "le 0.005: %g", B("0.005"));
	CHECK(B("0.01") == 3, "le 0.01: %g", B("0.01"));
	CHECK(B("0.025") == 4, "le 0.025: %g", B("0.025"));
	CHECK(B("2.5") == 4, "le 2.5: %g", B("2.5"));
	CHECK(B("+Inf") == 5, "le +Inf: %g", B("+Inf"));
#undef B
	CHECK(sample(text, "loopwatch_loop_iteration_seconds_count{" LBL "}") == 5, "count");
	CHECK(strstr(text, "loopwatch_loop_iteration_seconds_sum{" LBL "} 3.024900100\n"),
	      "sum in exact seconds:\n%s", text);
	CHECK(sample(text, "loopwatch_loop_iterations_total{" LBL "}") == 5, "iterations");
	CHECK(sample(text, "loopwatch_loop_idle_seconds_total{" LBL "}") == 0.005, "idle");
	CHECK(sample(text, "loopwatch_stalls_total{" LBL "}") == 2, "stalls from the kernel");
	CHECK(sample(text, "loopwatch_events_dropped_total") == 3, "events dropped");
	CHECK(sample(text, "loopwatch_loop_map_full_total") == 4, "loop map full");
	CHECK(sample(text, "loopwatch_switch_ins_missed_total") == 5, "switch-ins missed");
	CHECK(sample(text, "loopwatch_loop_records_refused_total") == 6, "loop records refused");
	CHECK(sample(text, "loopwatch_preemptions_total") == 8, "preemptions");
	CHECK(sample(text, "loopwatch_stack_walks_total") == 7, "sample walks");
	CHECK(sample(text, "loopwatch_loop_threads_tracked") == 1, "one thread tracked");
	CHECK(strstr(text, "# TYPE loopwatch_loop_iteration_seconds histogram\n"), "TYPE");
	CHECK(strstr(text, "loopwatch_build_info{version=\""), "build info");
	free(text);
	prom_registry__free(sp);
	model__free(m);
}

static void test_escaping(void)
{
	const __u64 busy[] = { 1000 };
	struct model *m = model__fresh();
	struct prom_registry *sp = reg__new(false);
	struct loop_thread *t;
	char *text;

	model__ingest(m, record(FAKE_PID, FAKE_PID, busy, 1));
	t = thread__find(m, FAKE_PID);
	strcpy(t->comm, "a\"b\\c");
	strcpy(t->exe, "/opt/caf\xc3\xa9/x\ny");
	strcpy(t->cgroup, "/bad\xff\xed\xa0\x80utf8");
	text = render(sp, m, 0);
	CHECK(sample(text, "loopwatch_loop_iterations_total{comm=\"a\\\"b\\\\c\","
		     "exe=\"/opt/caf\xc3\xa9/x\\ny\",cgroup=\"/bad????utf8\"}") == 1,
	      "escaped labels:\n%s", text);
	free(text);
	prom_registry__free(sp);
	model__free(m);
}

static void test_aggregate_and_per_pid(void)
{
	const __u64 busy[] = { 2000000, 2000000, 2000000 };
	struct model *m = model__fresh();
	struct prom_registry *agg = reg__new(false);
	struct prom_registry *per = reg__new(true);
	char *text;

	model__ingest(m, record(FAKE_PID, FAKE_PID, busy, 3));
	model__ingest(m, record(FAKE_PID + 1, FAKE_PID + 2, busy, 2));
	thread__label(m, FAKE_PID);
	thread__label(m, FAKE_PID + 2);
	text = render(agg, m, 0);
	CHECK(sample(text, "loopwatch_loop_iterations_total{" LBL "}") == 5,
	      "same labels sum up:\n%s", text);
	CHECK(sample(text, "loopwatch_loop_iteration_seconds_bucket{" LBL ",le=\"0.005\"}") == 5,
	      "histograms sum up");
	free(text);
	text = render(per, m, 0);
	CHECK(sample(text, "loopwatch_loop_iterations_total{" LBL ",pid=\"4190000\","
		     "tid=\"4190000\"}") == 3, "per pid: first thread:\n%s", text);
	CHECK(sample(text, "loopwatch_loop_iterations_total{" LBL ",pid=\"4190001\","
		     "tid=\"4190002\"}") == 2, "per pid: second thread");
	free(text);
	prom_registry__free(agg);
	prom_registry__free(per);
	model__free(m);
}

static void test_monotonic(void)
{
	const __u64 busy[] = { 2000000, 2000000, 2000000, 2000000 };
	struct model *m = model__fresh();
	struct prom_registry *sp = reg__new(false);
	struct loop_thread *t;
	char *text;

	model__ingest(m, record(FAKE_PID, FAKE_PID, busy, 3));
	model__ingest(m, record(FAKE_PID, FAKE_PID + 1, busy, 4));
	thread__label(m, FAKE_PID);
	thread__label(m, FAKE_PID + 1);
	free(render(sp, m, 0));

	/* a thread exits and the model forgets it: its 3 stay */
	model__forget_tid(m, FAKE_PID);
	text = render(sp, m, 1);
	CHECK(sample(text, "loopwatch_loop_iterations_total{" LBL "}") == 7,
	      "exited thread's share kept:\n%s", text);
	free(text);

	/* the other's kernel record starts over at 1: 7 + 1 */
	model__ingest(m, record(FAKE_PID, FAKE_PID + 1, busy, 1));
	text = render(sp, m, 2);
	CHECK(sample(text, "loopwatch_loop_iterations_total{" LBL "}") == 8,
	      "record restart counted on top:\n%s", text);
	CHECK(sample(text, "loopwatch_loop_iteration_seconds_bucket{" LBL ",le=\"+Inf\"}") == 8,
	      "buckets too");
	free(text);

	/* renamed: the old series keeps 8, the new one counts what comes after */
	t = thread__find(m, FAKE_PID + 1);
	strcpy(t->comm, "renamed");
	model__ingest(m, record(FAKE_PID, FAKE_PID + 1, busy, 3));
	text = render(sp, m, 3);
	CHECK(sample(text, "loopwatch_loop_iterations_total{" LBL "}") == 8,
	      "old name keeps its count:\n%s", text);
	CHECK(sample(text, "loopwatch_loop_iterations_total{comm=\"renamed\","
		     "exe=\"/usr/bin/server\",cgroup=\"/system.slice/server.service\","
		     "service=\"server.service\"}") == 2,
	      "new name counts from the rename");
	free(text);
	prom_registry__free(sp);
	model__free(m);
}

static void test_grace_period(void)
{
	const __u64 busy[] = { 2000000 };
	struct model *m = model__fresh();
	struct prom_registry *per = reg__new(true);
	struct prom_registry *agg = reg__new(false);
	const char *series = "loopwatch_loop_iterations_total{comm=\"server\",exe=\"\","
			     "cgroup=\"\",pid=\"4190000\",tid=\"4190000\"}";
	const char *agg_series = "loopwatch_loop_iterations_total{comm=\"server\",exe=\"\","
				 "cgroup=\"\"}";
	char *text;

	model__ingest(m, record(FAKE_PID, FAKE_PID, busy, 1));
	free(render(per, m, 100));
	rec.flags = LW_THREAD_EXITED;
	model__ingest(m, &rec);
	text = render(per, m, 200);
	CHECK(sample(text, series) == 1, "exited: kept during the grace period");
	CHECK(sample(text, "loopwatch_loop_threads_tracked") == 0, "not tracked once exited");
	free(text);
	text = render(per, m, 200 + PROM_STALE_S - 1);
	CHECK(sample(text, series) == 1, "still there just before the grace period ends");
	free(text);
	text = render(per, m, 200 + PROM_STALE_S + 1);
	CHECK(sample(text, series) == -1, "gone after the grace period:\n%s", text);
	free(text);
	text = render(per, m, 200 + PROM_STALE_S + 60);
	CHECK(sample(text, series) == -1, "and does not come back while the model has it");
	free(text);
	text = render(agg, m, 200);
	CHECK(sample(text, agg_series) == 1, "aggregate series kept while fresh:\n%s", text);
	free(text);
	text = render(agg, m, 200 + PROM_STALE_S + 1);
	CHECK(sample(text, agg_series) == -1, "stale aggregate series gone:\n%s", text);
	free(text);
	prom_registry__free(per);
	prom_registry__free(agg);
	model__free(m);
}

static void test_container_id(void)
{
	const char *id = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	const char *fmt[] = {
		"/system.slice/docker-%s.scope",
		"/docker/%s",
		"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice/"
		"cri-containerd-%s.scope",
		"/kubepods/besteffort/pod1/%s",
		"/machine.slice/libpod-%s.scope/container",
		"/kubepods.slice/crio-%s.scope",
	};
	char path[512], got[65];

	for (size_t i = 0; i < sizeof(fmt) / sizeof(fmt[0]); i++) {
		snprintf(path, sizeof(path), fmt[i], id);
		CHECK(cgroup__container_id(path, got, sizeof(got)) && !strcmp(got, id),
		      "container id in %s", path);
	}
	CHECK(!cgroup__container_id("/system.slice/nginx.service", got, sizeof(got)),
	      "no id in a plain service");
	CHECK(!cgroup__container_id("/docker/0123456789abcdef0123456789abcdef0123456789abcdef"
				    "0123456789abcde", got, sizeof(got)), "63 digits is no id");
	CHECK(!cgroup__container_id("/docker/0123456789abcdef0123456789abcdef0123456789abcdef"
				    "0123456789abcdef0", got, sizeof(got)), "65 digits is no id");
}

/* One kernel aggregate of (pid, syscall nr) in the kernel's map, for the next drain. */
static void syscall__add(__u32 pid, const char *comm, int nr, __u64 count, __u64 total_ns)
{
	struct lw_syscall_stats *st = &fake.sstats[fake.nsyscalls];

	memset(st, 0, sizeof(*st));
	snprintf(st->comm, sizeof(st->comm), "%s", comm);
	st->count = count;
	st->total_ns = total_ns;
	st->max_ns = count ? total_ns / count : 0;
	st->hist.counts[lw_hist_bucket(st->max_ns)] = count;
	fake.skeys[fake.nsyscalls++] = (struct lw_syscall_key){ .pid = pid, .nr = nr };
}

/*
 * One kernel record of (pid, probe id) in the kernel's map, for the next
 * drain of the model. comm is the calling thread's name.
 */
static void probe__add(__u32 pid, __u32 id, const char *comm, const char *label, __u64 calls,
		       __u64 total_ns, __u64 busy_ns)
{
	struct lw_probe_stats *st = &fake.pstats[fake.nprobes];

	fake.labels[id] = label;
	memset(st, 0, sizeof(*st));
	snprintf(st->comm, sizeof(st->comm), "%s", comm);
	st->calls = calls;
	st->total_ns = total_ns;
	st->busy_ns = busy_ns;
	st->max_ns = calls ? total_ns / calls : 0;
	st->hist.counts[lw_hist_bucket(st->max_ns)] = calls;
	fake.pkeys[fake.nprobes++] = (struct lw_probe_key){ .pid = pid, .id = id };
}

/* A kernel record in a drain: of its kind's first or second syscall or probe. */
struct agg_rec {
	__u32 pid;
	const char *comm;
	int which;
	__u64 calls;
	__u64 total_ns;
};

/*
 * Syscalls and probes: what the kernel counts per process, exported with the
 * same labels and guarantees. A kind says how its records reach the model
 * and how its series are named.
 */
struct agg_kind {
	const char *label;		/* "syscall" or "probe" */
	const char *keys[2];
	const char *calls;		/* the family of the count */
	const char *seconds;		/* the family of the time */
	void (*drain)(const struct agg_kind *k, struct model *m, const struct agg_rec *v,
		      int n);
};

static void syscalls__drain(const struct agg_kind *k, struct model *m,
			    const struct agg_rec *v, int n)
{
	static const int nr[] = { SYS_clock_nanosleep, SYS_futex };

	(void)k;
	fake.nsyscalls = 0;
	for (int i = 0; i < n; i++)
		syscall__add(v[i].pid, v[i].comm, nr[v[i].which], v[i].calls, v[i].total_ns);
	model__drain(m, &fake_source, MODEL_AGGREGATES);
}

/* all of a call inside a loop busy period; the probe id is which + 1 */
static void probes__drain(const struct agg_kind *k, struct model *m, const struct agg_rec *v,
			  int n)
{
	fake.nprobes = 0;
	for (int i = 0; i < n; i++)
		probe__add(v[i].pid, v[i].which + 1, v[i].comm, k->keys[v[i].which],
			   v[i].calls, v[i].total_ns, v[i].total_ns);
	model__drain(m, &fake_source, MODEL_AGGREGATES);
}

static const struct agg_kind syscalls = {
	"syscall", { "clock_nanosleep", "futex" }, "loopwatch_blocking_syscalls_total",
	"loopwatch_blocking_syscall_seconds_total", syscalls__drain,
};

static const struct agg_kind probes = {
	"probe", { "json.dumps", "json.loads" }, "loopwatch_probe_calls_total",
	"loopwatch_probe_seconds_total", probes__drain,
};

#define NOLBL "comm=\"server\",exe=\"\",cgroup=\"\""
#define PROBE_BUSY "loopwatch_probe_busy_seconds_total"

/* family{syscall="futex",labels}: the name of a sample, valid for the next 7 calls */
static const char *agg__series(const struct agg_kind *k, const char *family, int which,
			       const char *labels)
{
	static char buf[8][512];
	static unsigned int next;
	char *s = buf[next++ % 8];

	snprintf(s, sizeof(buf[0]), "%s{%s=\"%s\",%s}", family, k->label, k->keys[which], labels);
	return s;
}

#define CALLS(k, which, labels) agg__series(k, (k)->calls, which, labels)
#define SECS(k, which, labels) agg__series(k, (k)->seconds, which, labels)

/* The text holds the sample with exactly this value as printed (exact seconds). */
static bool has_sample(const char *text, const char *series, const char *value)
{
	char line[600];

	snprintf(line, sizeof(line), "%s %s\n", series, value);
	return strstr(text, line);
}

/* text holds "# TYPE family counter" and its HELP */
static bool has_counter_family(const char *text, const char *family)
{
	char type[128], help[128];

	snprintf(type, sizeof(type), "# TYPE %s counter\n", family);
	snprintf(help, sizeof(help), "# HELP %s ", family);
	return strstr(text, type) && strstr(text, help);
}

static void test_aggs_labelled_like_their_loops(const struct agg_kind *k)
{
	const struct agg_rec v[] = {
		{ FAKE_PID, "server", 0, 3, 90000000 },
		{ FAKE_PID, "server", 1, 2, 40000001 },
		{ FAKE_PID + 1, "server", 0, 2, 60000000 },
		/* a process whose loop thread the model has not seen (yet, or any more) */
		{ FAKE_PID + 2, "server", 0, 1, 5000000 },
	};
	const __u64 busy[] = { 2000000 };
	struct model *m = model__fresh();
	struct prom_registry *agg = reg__new(false);
	struct prom_registry *per = reg__new(true);
	char other[128], *text;

	model__ingest(m, record(FAKE_PID, FAKE_PID + 3, busy, 1));
	model__ingest(m, record(FAKE_PID + 1, FAKE_PID + 1, busy, 1));
	thread__label(m, FAKE_PID + 3);
	thread__label(m, FAKE_PID + 1);
	k->drain(k, m, v, 4);

	text = render(agg, m, 0);
	CHECK(sample(text, CALLS(k, 0, LBL)) == 5, "%s: two processes of one program sum up:\n%s",
	      k->label, text);
	CHECK(has_sample(text, SECS(k, 0, LBL), "0.150000000"), "%s: exact seconds", k->label);
	CHECK(sample(text, CALLS(k, 1, LBL)) == 2, "%s: another one, another series", k->label);
	CHECK(has_sample(text, SECS(k, 1, LBL), "0.040000001"), "%s: its seconds", k->label);
	CHECK(sample(text, CALLS(k, 0, NOLBL)) == 1, "%s: no loop thread: empty exe and cgroup",
	      k->label);
	CHECK(has_counter_family(text, k->calls) && has_counter_family(text, k->seconds),
	      "%s: HELP and TYPE", k->label);
	CHECK(sample(text, "loopwatch_loop_threads_tracked") == 2,
	      "%s: aggregates are not loop threads", k->label);
	snprintf(other, sizeof(other), "loopwatch_loop_iterations_total{%s=", k->label);
	CHECK(!strstr(text, other), "%s series only in their families", k->label);
	snprintf(other, sizeof(other), "%s{comm=", k->calls);
	CHECK(!strstr(text, other), "loop series not in the %s families", k->label);
	free(text);

	text = render(per, m, 0);
	CHECK(sample(text, CALLS(k, 0, LBL ",pid=\"4190000\"")) == 3,
	      "%s per pid: pid but no tid (the kernel sums a process's threads):\n%s", k->label,
	      text);
	CHECK(sample(text, CALLS(k, 0, LBL ",pid=\"4190001\"")) == 2,
	      "%s per pid: the other process", k->label);
	free(text);
	prom_registry__free(agg);
	prom_registry__free(per);
	model__free(m);
}

static void test_aggs_monotonic(const struct agg_kind *k)
{
	struct agg_rec r = { FAKE_PID, "server", 0, 3, 90000000 };
	const __u64 busy[] = { 2000000 };
	struct model *m = model__fresh();
	struct prom_registry *sp = reg__new(false);
	char *text;

	model__ingest(m, record(FAKE_PID, FAKE_PID, busy, 1));
	thread__label(m, FAKE_PID);
	k->drain(k, m, &r, 1);
	free(render(sp, m, 0));

	/* the kernel's LRU evicted the entry: what it counted stays */
	k->drain(k, m, NULL, 0);
	text = render(sp, m, 1);
	CHECK(sample(text, CALLS(k, 0, LBL)) == 3, "%s evicted: kept:\n%s", k->label, text);
	free(text);

	/* the entry comes back from zero: counted on top */
	r.calls = 1;
	r.total_ns = 30000000;
	k->drain(k, m, &r, 1);
	text = render(sp, m, 2);
	CHECK(sample(text, CALLS(k, 0, LBL)) == 4, "%s recreated: on top:\n%s", k->label, text);
	CHECK(has_sample(text, SECS(k, 0, LBL), "0.120000000"), "%s: seconds on top", k->label);
	free(text);
	r.calls = 2;
	r.total_ns = 60000000;
	k->drain(k, m, &r, 1);
	text = render(sp, m, 3);
	CHECK(sample(text, CALLS(k, 0, LBL)) == 5, "%s: then grows by its delta", k->label);
	free(text);

	/*
	 * The process exits and the model forgets its thread; the kernel keeps
	 * the aggregate: the series keeps its labels instead of moving to exe="".
	 */
	model__forget_tid(m, FAKE_PID);
	text = render(sp, m, 4);
	CHECK(sample(text, CALLS(k, 0, LBL)) == 5, "%s: labels kept:\n%s", k->label, text);
	CHECK(sample(text, CALLS(k, 0, NOLBL)) == -1, "%s: no exe=\"\" series", k->label);
	free(text);
	prom_registry__free(sp);
	model__free(m);
}

static void test_aggs_grace_period(const struct agg_kind *k)
{
	const struct agg_rec r = { FAKE_PID, "server", 1, 4, 80000000 };
	const __u64 busy[] = { 2000000 };
	struct model *m = model__fresh();
	struct prom_registry *per = reg__new(true);
	struct prom_registry *agg = reg__new(false);
	const char *series = CALLS(k, 1, NOLBL ",pid=\"4190000\"");
	char *text;

	model__ingest(m, record(FAKE_PID, FAKE_PID, busy, 1));
	k->drain(k, m, &r, 1);
	free(render(per, m, 100));
	free(render(agg, m, 100));
	rec.flags = LW_THREAD_EXITED;
	model__ingest(m, &rec);
	text = render(per, m, 200);
	CHECK(sample(text, series) == 4, "%s exited: kept during the grace period:\n%s", k->label,
	      text);
	free(text);
	text = render(per, m, 200 + PROM_STALE_S + 1);
	CHECK(sample(text, series) == -1, "%s: gone after the grace period:\n%s", k->label, text);
	free(text);
	text = render(per, m, 200 + PROM_STALE_S + 60);
	CHECK(sample(text, series) == -1, "%s: and does not come back while the kernel has it",
	      k->label);
	free(text);
	/* without pid labels too: a series nothing alive counts in goes after the window */
	text = render(agg, m, 200);
	CHECK(sample(text, CALLS(k, 1, NOLBL)) == 4, "%s: aggregate kept:\n%s", k->label, text);
	free(text);
	text = render(agg, m, 200 + PROM_STALE_S + 1);
	CHECK(sample(text, CALLS(k, 1, NOLBL)) == -1, "%s: stale aggregate gone:\n%s", k->label,
	      text);
	free(text);
	prom_registry__free(per);
	prom_registry__free(agg);
	model__free(m);
}

static void test_syscalls_restart_and_pid_reuse(void)
{
	struct agg_rec r = { FAKE_PID, "server", 0, 3, 90000000 };
	const __u64 busy[] = { 2000000 };
	struct model *m = model__fresh();
	struct prom_registry *sp = reg__new(false);
	char *text;

	model__ingest(m, record(FAKE_PID, FAKE_PID, busy, 1));
	thread__label(m, FAKE_PID);
	syscalls__drain(&syscalls, m, &r, 1);
	free(render(sp, m, 0));

	/* evicted and recreated between two writes, now below the last value: on top */
	r.calls = 1;
	r.total_ns = 30000000;
	syscalls__drain(&syscalls, m, &r, 1);
	text = render(sp, m, 1);
	CHECK(sample(text, CALLS(&syscalls, 0, LBL)) == 4, "went back: on top:\n%s", text);
	free(text);

	/* the process is gone; its pid is reused by another program: a new series */
	model__forget_tid(m, FAKE_PID);
	r.comm = "other";
	syscalls__drain(&syscalls, m, &r, 1);
	text = render(sp, m, 2);
	CHECK(sample(text, CALLS(&syscalls, 0, LBL)) == 4, "old process kept:\n%s", text);
	CHECK(sample(text, CALLS(&syscalls, 0, "comm=\"other\",exe=\"\",cgroup=\"\"")) == 1,
	      "new process");
	free(text);
	prom_registry__free(sp);
	model__free(m);
}

static void test_probes_busy_and_names(void)
{
	const __u64 busy[] = { 2000000 };
	struct model *m = model__fresh();
	struct prom_registry *sp = reg__new(false);
	char *text;

	model__ingest(m, record(FAKE_PID, FAKE_PID, busy, 1));
	thread__label(m, FAKE_PID);
	fake.nprobes = 0;
	/* the kernel names a probe record after the thread that called first */
	probe__add(FAKE_PID, 1, "worker-3", "json.dumps", 10, 250000000, 200000000);
	/* two probes under one label (JSON.parse of one- and two-byte strings) */
	probe__add(FAKE_PID, 7, "server", "json.loads", 2, 2000000, 0);
	probe__add(FAKE_PID, 8, "server", "json.loads", 3, 3000000, 1000001);
	model__drain(m, &fake_source, MODEL_AGGREGATES);

	text = render(sp, m, 0);
	CHECK(sample(text, CALLS(&probes, 0, LBL)) == 10,
	      "named after the process, like its loops:\n%s", text);
	CHECK(!strstr(text, "comm=\"worker-3\""), "no series under a thread's name");
	CHECK(has_sample(text, agg__series(&probes, PROBE_BUSY, 0, LBL), "0.200000000"),
	      "busy seconds exact");
	CHECK(sample(text, CALLS(&probes, 1, LBL)) == 5, "one label, one series");
	CHECK(has_sample(text, agg__series(&probes, PROBE_BUSY, 1, LBL), "0.001000001"),
	      "its busy time summed");
	CHECK(has_counter_family(text, PROBE_BUSY), "HELP and TYPE");
	free(text);
	prom_registry__free(sp);
	model__free(m);
}

/* A drain of FAKE_PID's json.dumps in one or two records (ids 1 and 2). */
static void dumps__drain(struct model *m, __u64 calls1, __u64 calls2)
{
	fake.nprobes = 0;
	if (calls1)
		probe__add(FAKE_PID, 1, "server", "json.dumps", calls1, calls1 * 1000000,
			   calls1 * 500000);
	if (calls2)
		probe__add(FAKE_PID, 2, "server", "json.dumps", calls2, calls2 * 1000000,
			   calls2 * 500000);
	model__drain(m, &fake_source, MODEL_AGGREGATES);
}

static void test_probes_sum_records_without_counting_twice(void)
{
	const __u64 busy[] = { 2000000 };
	struct model *m = model__fresh();
	struct prom_registry *sp = reg__new(false);
	const char *calls = CALLS(&probes, 0, LBL);
	struct loop_thread *t;
	char *text;

	model__ingest(m, record(FAKE_PID, FAKE_PID, busy, 1));
	thread__label(m, FAKE_PID);
	dumps__drain(m, 3, 0);
	free(render(sp, m, 0));
	dumps__drain(m, 3, 40);
	text = render(sp, m, 1);
	CHECK(sample(text, calls) == 43, "a second record under the label: summed:\n%s", text);
	free(text);

	/*
	 * The first record goes, the second grows: the sum falls to 41. Those
	 * 41 were counted already (but the growth of 1 in the interval is lost):
	 * counting them from zero would add 40 calls that never happened.
	 */
	dumps__drain(m, 0, 41);
	text = render(sp, m, 2);
	CHECK(sample(text, calls) == 43, "one of two records evicted: no calls twice:\n%s",
	      text);
	free(text);
	dumps__drain(m, 0, 50);
	text = render(sp, m, 3);
	CHECK(sample(text, calls) == 52, "then grows by its delta:\n%s", text);
	CHECK(has_sample(text, SECS(&probes, 0, LBL), "0.052000000"), "seconds too");
	free(text);

	/*
	 * With no loop thread to name the process, the model names a sum of
	 * records after the first one it reads, and each record after its
	 * first caller: a name that changes with the order of the kernel's
	 * table is not another process.
	 */
	model__forget_tid(m, FAKE_PID);
	fake.nprobes = 0;
	probe__add(FAKE_PID, 3, "worker-3", "json.dumps", 1, 1000000, 500000);
	probe__add(FAKE_PID, 2, "server", "json.dumps", 50, 50000000, 25000000);
	model__drain(m, &fake_source, MODEL_AGGREGATES);
	text = render(sp, m, 4);
	CHECK(sample(text, calls) == 53, "first caller's name: same series, no calls twice:\n%s",
	      text);
	free(text);

	/* its pid reused by another loop program: new labels, the old series keeps 53 */
	model__ingest(m, record(FAKE_PID, FAKE_PID + 5, busy, 1));
	t = thread__find(m, FAKE_PID + 5);
	strcpy(t->comm, "other");
	strcpy(t->exe, "/usr/bin/other");
	dumps__drain(m, 0, 54);
	text = render(sp, m, 5);
	CHECK(sample(text, calls) == 53, "old process kept:\n%s", text);
	CHECK(sample(text, CALLS(&probes, 0, "comm=\"other\",exe=\"/usr/bin/other\","
				 "cgroup=\"\"")) == 3, "the new one counts from its start");
	free(text);
	prom_registry__free(sp);
	model__free(m);
}

/* A process with no loop thread is alive while its probe counts move. */
static void test_probes_quiet_process_grace_period(void)
{
	const char *series = CALLS(&probes, 0, NOLBL ",pid=\"4190001\"");
	struct agg_rec r = { FAKE_PID + 1, "server", 0, 2, 2000000 };
	struct model *m = model__fresh();
	struct prom_registry *per = reg__new(true);
	/* gone from 101 s on: the first write that saw no new calls */
	double end = 101 + PROM_STALE_S;
	char *text;

	probes__drain(&probes, m, &r, 1);
	free(render(per, m, 0));
	r.calls = 3;
	probes__drain(&probes, m, &r, 1);
	free(render(per, m, 100));
	text = render(per, m, 101);
	CHECK(sample(text, series) == 3, "quiet: kept:\n%s", text);
	free(text);
	text = render(per, m, end - 1);
	CHECK(sample(text, series) == 3, "kept during the grace period");
	free(text);
	text = render(per, m, end + 1);
	CHECK(sample(text, series) == -1, "quiet for the grace period: gone:\n%s", text);
	free(text);
	text = render(per, m, end + 60);
	CHECK(sample(text, series) == -1, "and stays gone while its counts do not move");
	free(text);

	/* it calls again: back, counting from there */
	r.calls = 5;
	probes__drain(&probes, m, &r, 1);
	text = render(per, m, end + 120);
	CHECK(sample(text, series) == 2, "calls again: a series of the new calls:\n%s", text);
	free(text);
	text = render(per, m, end + 121);
	CHECK(sample(text, series) == 2, "and is kept while quiet");
	free(text);
	prom_registry__free(per);
	model__free(m);
}

/* A thread per cgroup path, each in its own process. */
static struct loop_thread *thread__in(struct model *m, __u32 pid, const char *cgroup, int n)
{
	static const __u64 busy[16] = { 2000000, 2000000, 2000000, 2000000, 2000000, 2000000,
					2000000, 2000000, 2000000, 2000000, 2000000, 2000000,
					2000000, 2000000, 2000000, 2000000 };
	struct loop_thread *t;

	model__ingest(m, record(pid, pid, busy, n));
	t = thread__find(m, pid);
	strcpy(t->exe, "/usr/bin/server");
	snprintf(t->cgroup, sizeof(t->cgroup), "%s", cgroup);
	cgroup__identity(cgroup, &t->cg);
	return t;
}

#define CID "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define UID "1d2c3b4a-0000-4111-8222-333344445555"
#define POD_SLICE "/kubepods.slice/kubepods-burstable.slice/" \
		  "kubepods-burstable-pod1d2c3b4a_0000_4111_8222_333344445555.slice"

static void test_service_labels(void)
{
	struct model *m = model__fresh();
	struct prom_registry *sp = reg__new(false);
	struct loop_thread *t;
	char *text;

	thread__in(m, FAKE_PID, "/system.slice/nginx.service", 1);
	thread__in(m, FAKE_PID + 1, "/user.slice/user-0.slice/run-r7f.scope", 1);
	thread__in(m, FAKE_PID + 2, "/system.slice/docker-" CID ".scope", 1);
	thread__in(m, FAKE_PID + 3, POD_SLICE "/cri-containerd-" CID ".scope", 1);
	t = thread__in(m, FAKE_PID + 4, "/kubepods/besteffort/pod" UID "/" CID, 1);
	strcpy(t->k8s.ns, "shop");
	strcpy(t->k8s.pod, "checkout-7d9f-x2x");
	strcpy(t->k8s.container, "api");
	thread__in(m, FAKE_PID + 5, "/", 1);
	text = render(sp, m, 0);
#define IT(labels) sample(text, "loopwatch_loop_iterations_total{comm=\"server\"," \
			  "exe=\"/usr/bin/server\"," labels "}")
	CHECK(IT("cgroup=\"/system.slice/nginx.service\",service=\"nginx.service\"") == 1,
	      "systemd service:\n%s", text);
	CHECK(IT("cgroup=\"/user.slice/user-0.slice/run-r7f.scope\",service=\"run-r7f.scope\"") ==
	      1, "systemd scope");
	CHECK(IT("cgroup=\"/system.slice/docker-" CID ".scope\",service=\"container-0123456789ab\","
		 "container_id=\"" CID "\"") == 1, "docker container: not the scope's unit");
	CHECK(IT("cgroup=\"" POD_SLICE "/cri-containerd-" CID ".scope\",service=\"" UID "\","
		 "container_id=\"" CID "\",pod_uid=\"" UID "\"") == 1,
	      "kubernetes, systemd driver, names unknown");
	CHECK(IT("cgroup=\"/kubepods/besteffort/pod" UID "/" CID "\",service=\"shop/api\","
		 "container_id=\"" CID "\",pod_uid=\"" UID "\",namespace=\"shop\","
		 "pod=\"checkout-7d9f-x2x\",container=\"api\"") == 1,
	      "kubernetes, cgroupfs driver, names from the kubelet");
	CHECK(IT("cgroup=\"/\"") == 1, "no identity: no service label");
#undef IT
	free(text);
	prom_registry__free(sp);
	model__free(m);
}

static void test_min_iterations(void)
{
	struct prom_options o = { false, PROM_STALE_S, PROM_MAX_SERIES, 10, false };
	struct prom_registry *sp = prom_registry__new(&o);
	struct model *m = model__fresh();
	const char *it = "loopwatch_loop_iterations_total{comm=\"server\",exe=\"/usr/bin/server\","
			 "cgroup=\"/\"}";
	char *text;

	thread__in(m, FAKE_PID, "/", 9);
	syscall__add(FAKE_PID, "server", 35, 2, 20000000);
	model__drain(m, &fake_source, MODEL_AGGREGATES);
	text = render(sp, m, 0);
	CHECK(sample(text, it) == -1, "9 iterations: no loop yet:\n%s", text);
	CHECK(!strstr(text, "loopwatch_blocking_syscalls_total{"), "nor its blocking calls");
	free(text);
	thread__in(m, FAKE_PID, "/", 12);
	text = render(sp, m, 1);
	CHECK(sample(text, it) == 12, "12: in, with every iteration:\n%s", text);
	CHECK(strstr(text, "loopwatch_blocking_syscalls_total{syscall=\"nanosleep\""),
	      "its blocking calls too:\n%s", text);
	free(text);
	prom_registry__free(sp);
	model__free(m);
}

static void test_series_cap(void)
{
	struct prom_options o = { false, 10, 3, 0, false };
	struct prom_registry *sp = prom_registry__new(&o);
	struct model *m = model__fresh();
	char path[64], *text;

	for (int i = 0; i < 5; i++) {
		snprintf(path, sizeof(path), "/c%d", i);
		thread__in(m, FAKE_PID + i, path, 1);
	}
	text = render(sp, m, 0);
	CHECK(sample(text, "loopwatch_series") == 3, "capped at 3:\n%s", text);
	CHECK(sample(text, "loopwatch_series_dropped_total") == 2, "two kept out");
	free(text);
	text = render(sp, m, 1);
	CHECK(sample(text, "loopwatch_series_dropped_total") == 2, "counted once each");
	free(text);
	/* one of the three exits: once stale, a waiting one takes its place */
	rec.flags = 0;
	thread__in(m, FAKE_PID, "/c0", 1);
	rec.flags = LW_THREAD_EXITED;
	model__ingest(m, &rec);
	rec.flags = 0;
	free(render(sp, m, 2));
	free(render(sp, m, 13));
	text = render(sp, m, 14);
	CHECK(sample(text, "loopwatch_series") == 3, "still 3:\n%s", text);
	CHECK(sample(text, "loopwatch_series_expired_total") == 1, "one expired");
	CHECK(!strstr(text, "cgroup=\"/c0\""), "the exited one is gone");
	free(text);
	prom_registry__free(sp);
	model__free(m);
}

/*
 * Per-pid churn: 16000 exited threads expire in one write. Dropping them one
 * at a time with a scan each took minutes under real churn; in one pass it
 * is milliseconds.
 */
static void test_churn_expires_in_linear_time(void)
{
	struct prom_options o = { true, 10, 0, 0, false };
	struct prom_registry *sp = prom_registry__new(&o);
	struct model *m = model__fresh();
	const __u64 busy[] = { 2000000 };
	struct timespec a, b;
	double took_s;
	char *text;
	int n = 16000;

	for (int i = 0; i < n; i++) {
		record(FAKE_PID - i, FAKE_PID - i, busy, 1);
		rec.flags = LW_THREAD_EXITED;
		model__ingest(m, &rec);
	}
	free(render(sp, m, 0));
	/* CPU time: what the expiry costs, whatever else a loaded host runs */
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
	text = render(sp, m, 11);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
	took_s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
	CHECK(sample(text, "loopwatch_series") == 0, "all gone:\n%.300s", text);
	CHECK(sample(text, "loopwatch_series_expired_total") == n, "%d expired", n);
	CHECK(took_s < 1.0, "16000 series expired in %.3f s of CPU", took_s);
	printf("16000 per-pid series expired in one write: %.1f ms of CPU\n", took_s * 1e3);
	free(text);
	prom_registry__free(sp);
	model__free(m);
}

static void test_openmetrics(void)
{
	const __u64 busy[] = { 2000000 };
	struct model *m = model__fresh();
	struct prom_registry *sp = reg__new(false);
	char *text = NULL, *om = NULL;
	size_t len = 0;
	FILE *out;

	thread__in(m, FAKE_PID, "/", 1);
	(void)busy;
	free(text);
	text = render(sp, m, 0);
	out = open_memstream(&om, &len);
	prom_text__to_openmetrics(text, out);
	fclose(out);
	CHECK(strstr(om, "# TYPE loopwatch_loop_iterations counter\n"), "counter family:\n%s", om);
	CHECK(strstr(om, "# HELP loopwatch_loop_iterations Event-loop"), "HELP renamed too");
	CHECK(strstr(om, "\nloopwatch_loop_iterations_total{"), "samples keep _total");
	CHECK(strstr(om, "# TYPE loopwatch_loop_iteration_seconds histogram\n"), "histogram");
	CHECK(strstr(om, "# TYPE loopwatch_series gauge\n"), "gauge untouched");
	CHECK(len > 6 && !strcmp(om + len - 6, "# EOF\n"), "ends in # EOF");
	free(text);
	free(om);
	prom_registry__free(sp);
	model__free(m);
}

/* the native buckets of a loop series, summed; -1 when it has none */
static double native__total(struct prom_registry *sp, const char *labels)
{
	const __u64 *native = prom_registry__native(sp, labels);
	__u64 n = 0;

	if (!native)
		return -1;
	for (unsigned int k = 0; k < LW_HIST_BUCKETS; k++)
		n += native[k];
	return (double)n;
}

/*
 * --prom-native: the kernel buckets the native ones are made of count what
 * the classic ones do through an exit, a record that starts over and a
 * rename (count and sum are shared by both).
 */
static void test_native(void)
{
	const __u64 busy[] = { 2000000, 2000000, 2000000, 2000000 };
	struct prom_options o = { false, PROM_STALE_S, PROM_MAX_SERIES, 0, true };
	struct prom_registry *sp = prom_registry__new(&o);
	struct model *m = model__fresh();
	const __u64 *native;
	struct loop_thread *t;
	unsigned int slot = lw_hist_bucket(2000000);

	model__ingest(m, record(FAKE_PID, FAKE_PID, busy, 3));
	model__ingest(m, record(FAKE_PID, FAKE_PID + 1, busy, 4));
	thread__label(m, FAKE_PID);
	thread__label(m, FAKE_PID + 1);
	free(render(sp, m, 0));
	CHECK(native__total(sp, LBL) == 7, "native %g", native__total(sp, LBL));
	native = prom_registry__native(sp, LBL);
	CHECK(native && native[slot] == 7, "all in one bucket");
	model__forget_tid(m, FAKE_PID);
	free(render(sp, m, 1));
	CHECK(native__total(sp, LBL) == 7, "exited thread's share kept: %g",
	      native__total(sp, LBL));
	model__ingest(m, record(FAKE_PID, FAKE_PID + 1, busy, 1));
	free(render(sp, m, 2));
	CHECK(native__total(sp, LBL) == 8, "record restart counted on top: %g",
	      native__total(sp, LBL));
	t = thread__find(m, FAKE_PID + 1);
	strcpy(t->comm, "renamed");
	model__ingest(m, record(FAKE_PID, FAKE_PID + 1, busy, 3));
	free(render(sp, m, 3));
	CHECK(native__total(sp, LBL) == 8, "old name keeps its count");
	CHECK(native__total(sp, "comm=\"renamed\",exe=\"/usr/bin/server\","
			    "cgroup=\"/system.slice/server.service\",service=\"server.service\"")
	      == 2, "new name counts from the rename");
	prom_registry__free(sp);
	model__free(m);
	/* off by default: no buckets kept */
	sp = reg__new(false);
	m = model__fresh();
	model__ingest(m, record(FAKE_PID, FAKE_PID, busy, 3));
	thread__label(m, FAKE_PID);
	free(render(sp, m, 0));
	CHECK(native__total(sp, LBL) == -1, "no native buckets without --prom-native");
	prom_registry__free(sp);
	model__free(m);
}

int main(void)
{
	test_buckets_exact();
	test_escaping();
	test_aggregate_and_per_pid();
	test_monotonic();
	test_grace_period();
	test_aggs_labelled_like_their_loops(&syscalls);
	test_aggs_labelled_like_their_loops(&probes);
	test_aggs_monotonic(&syscalls);
	test_aggs_monotonic(&probes);
	test_aggs_grace_period(&syscalls);
	test_aggs_grace_period(&probes);
	test_syscalls_restart_and_pid_reuse();
	test_probes_busy_and_names();
	test_probes_sum_records_without_counting_twice();
	test_probes_quiet_process_grace_period();
	test_container_id();
	test_service_labels();
	test_min_iterations();
	test_series_cap();
	test_churn_expires_in_linear_time();
	test_openmetrics();
	test_native();
	return check__report();
}
