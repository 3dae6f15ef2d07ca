/*
 * The Prometheus sink on hand-built models: exact le buckets, escaping,
 * aggregation, counters that never go back (exit, rename, kernel record
 * restart, LRU eviction, pid reuse), the per-pid grace period, blocking
 * syscalls labelled like their process's loops, and container ids from
 * cgroup paths.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include "model.h"
#include "sink_prom.h"

static int passed, failed;

#define CHECK(cond, ...)                                                     \
	do {                                                                 \
		if (cond) {                                                  \
			passed++;                                            \
		} else {                                                     \
			failed++;                                            \
			printf("FAIL %s:%d: ", __FILE__, __LINE__);          \
			printf(__VA_ARGS__);                                 \
			printf("\n");                                        \
		}                                                            \
	} while (0)

/* pids far above any real one: the model's /proc reads find nothing */
#define FAKE_PID 4190000

static struct lw_loop rec;

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
static void model__forget(struct model *m, __u32 tid)
{
	for (size_t i = 0; i < m->nthreads; i++) {
		if (m->threads[i]->tid != tid)
			continue;
		m->threads[i] = m->threads[--m->nthreads];
		return;
	}
}

static char *render(struct sink_prom *sp, struct model *m, double now_s)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	sink_prom__render(sp, m, now_s, out);
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

#define LBL "comm=\"server\",exe=\"/usr/bin/server\",cgroup=\"/system.slice/server.service\""

static void thread__label(struct model *m, __u32 tid)
{
	struct loop_thread *t = thread__find(m, tid);

	strcpy(t->exe, "/usr/bin/server");
	strcpy(t->cgroup, "/system.slice/server.service");
}

static void test_buckets_exact(void)
{
	const __u64 busy[] = { 900000, 4000000, 20000000, 3000000000ULL, 100 };
	struct model *m = model__new();
	struct sink_prom *sp = sink_prom__open(NULL, false, NULL, 0);
	char *text;

	record(FAKE_PID, FAKE_PID, busy, 5);
	rec.stalls = 2;		/* the kernel counts them: 20 ms and 3 s */
	model__ingest(m, &rec);
	thread__label(m, FAKE_PID);
	sink_prom__set_kernel_counters(sp, 3, 4);
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
	CHECK(sample(text, "loopwatch_loop_threads_tracked") == 1, "one thread tracked");
	CHECK(strstr(text, "# TYPE loopwatch_loop_iteration_seconds histogram\n"), "TYPE");
	CHECK(strstr(text, "loopwatch_build_info{version=\""), "build info");
	free(text);
	sink_prom__close(sp);
	model__free(m);
}

static void test_escaping(void)
{
	const __u64 busy[] = { 1000 };
	struct model *m = model__new();
	struct sink_prom *sp = sink_prom__open(NULL, false, NULL, 0);
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
	sink_prom__close(sp);
	model__free(m);
}

static void test_aggregate_and_per_pid(void)
{
	const __u64 busy[] = { 2000000, 2000000, 2000000 };
	struct model *m = model__new();
	struct sink_prom *agg = sink_prom__open(NULL, false, NULL, 0);
	struct sink_prom *per = sink_prom__open(NULL, true, NULL, 0);
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
	sink_prom__close(agg);
	sink_prom__close(per);
	model__free(m);
}

static void test_monotonic(void)
{
	const __u64 busy[] = { 2000000, 2000000, 2000000, 2000000 };
	struct model *m = model__new();
	struct sink_prom *sp = sink_prom__open(NULL, false, NULL, 0);
	struct loop_thread *t;
	char *text;

	model__ingest(m, record(FAKE_PID, FAKE_PID, busy, 3));
	model__ingest(m, record(FAKE_PID, FAKE_PID + 1, busy, 4));
	thread__label(m, FAKE_PID);
	thread__label(m, FAKE_PID + 1);
	free(render(sp, m, 0));

	/* a thread exits and the model forgets it: its 3 stay */
	t = thread__find(m, FAKE_PID);
	model__forget(m, FAKE_PID);
	text = render(sp, m, 1);
	CHECK(sample(text, "loopwatch_loop_iterations_total{" LBL "}") == 7,
	      "exited thread's share kept:\n%s", text);
	free(text);
	free(t);	/* still in the model's hash, but in a bucket no later lookup walks */

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
		     "exe=\"/usr/bin/server\",cgroup=\"/system.slice/server.service\"}") == 2,
	      "new name counts from the rename");
	free(text);
	sink_prom__close(sp);
	model__free(m);
}

static void test_grace_period(void)
{
	const __u64 busy[] = { 2000000 };
	struct model *m = model__new();
	struct sink_prom *per = sink_prom__open(NULL, true, NULL, 0);
	struct sink_prom *agg = sink_prom__open(NULL, false, NULL, 0);
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
	text = render(per, m, 200 + PROM_GRACE_S - 1);
	CHECK(sample(text, series) == 1, "still there just before the grace period ends");
	free(text);
	text = render(per, m, 200 + PROM_GRACE_S + 1);
	CHECK(sample(text, series) == -1, "gone after the grace period:\n%s", text);
	free(text);
	text = render(per, m, 200 + PROM_GRACE_S + 60);
	CHECK(sample(text, series) == -1, "and does not come back while the model has it");
	free(text);
	text = render(agg, m, 200 + PROM_GRACE_S + 60);
	CHECK(sample(text, agg_series) == 1, "aggregate series stay:\n%s", text);
	free(text);
	sink_prom__close(per);
	sink_prom__close(agg);
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

/* One kernel aggregate of (pid, syscall nr) in the next drain of the model. */
static void syscall__add(struct model *m, __u32 pid, const char *comm, int nr, __u64 count,
			 __u64 total_ns)
{
	static struct lw_syscall_stats st;
	struct lw_syscall_key key = { .pid = pid, .nr = nr };

	memset(&st, 0, sizeof(st));
	snprintf(st.comm, sizeof(st.comm), "%s", comm);
	st.count = count;
	st.total_ns = total_ns;
	st.max_ns = count ? total_ns / count : 0;
	st.hist.counts[lw_hist_bucket(st.max_ns)] = count;
	model__add_syscall(m, &key, &st);
}

#define SC(name, syscall, labels) name "{syscall=\"" syscall "\"," labels "}"
#define CALLS(syscall, labels) SC("loopwatch_blocking_syscalls_total", syscall, labels)
#define SECS(syscall, labels) SC("loopwatch_blocking_syscall_seconds_total", syscall, labels)
#define NOLBL "comm=\"server\",exe=\"\",cgroup=\"\""

static void test_syscalls_labelled_like_their_loops(void)
{
	const __u64 busy[] = { 2000000 };
	struct model *m = model__new();
	struct sink_prom *agg = sink_prom__open(NULL, false, NULL, 0);
	struct sink_prom *per = sink_prom__open(NULL, true, NULL, 0);
	char *text;

	model__ingest(m, record(FAKE_PID, FAKE_PID + 3, busy, 1));
	model__ingest(m, record(FAKE_PID + 1, FAKE_PID + 1, busy, 1));
	thread__label(m, FAKE_PID + 3);
	thread__label(m, FAKE_PID + 1);
	model__clear_syscalls(m);
	syscall__add(m, FAKE_PID, "server", SYS_clock_nanosleep, 3, 90000000);
	syscall__add(m, FAKE_PID, "server", SYS_futex, 2, 40000001);
	syscall__add(m, FAKE_PID + 1, "server", SYS_clock_nanosleep, 2, 60000000);
	/* a process whose loop thread the model has not seen (yet, or any more) */
	syscall__add(m, FAKE_PID + 2, "server", SYS_read, 1, 5000000);
	model__sort_syscalls(m);

	text = render(agg, m, 0);
	CHECK(sample(text, CALLS("clock_nanosleep", LBL)) == 5,
	      "two processes of one program sum up:\n%s", text);
	CHECK(strstr(text, SECS("clock_nanosleep", LBL) " 0.150000000\n"),
	      "blocked time in exact seconds");
	CHECK(sample(text, CALLS("futex", LBL)) == 2, "another syscall, another series");
	CHECK(strstr(text, SECS("futex", LBL) " 0.040000001\n"), "futex seconds");
	CHECK(sample(text, CALLS("read", NOLBL)) == 1, "no loop thread: empty exe and cgroup");
	CHECK(strstr(text, "# TYPE loopwatch_blocking_syscall_seconds_total counter\n") &&
	      strstr(text, "# TYPE loopwatch_blocking_syscalls_total counter\n") &&
	      strstr(text, "# HELP loopwatch_blocking_syscalls_total "), "HELP and TYPE");
	CHECK(sample(text, "loopwatch_loop_threads_tracked") == 2,
	      "syscall aggregates are not loop threads");
	CHECK(!strstr(text, "loopwatch_loop_iterations_total{syscall="),
	      "syscall series only in the syscall families");
	CHECK(!strstr(text, "loopwatch_blocking_syscalls_total{comm="),
	      "loop series only in the loop families");
	free(text);

	text = render(per, m, 0);
	CHECK(sample(text, CALLS("clock_nanosleep", LBL ",pid=\"4190000\"")) == 3,
	      "per pid: pid but no tid (the kernel sums a process's threads):\n%s", text);
	CHECK(sample(text, CALLS("clock_nanosleep", LBL ",pid=\"4190001\"")) == 2,
	      "per pid: the other process");
	free(text);
	sink_prom__close(agg);
	sink_prom__close(per);
	model__free(m);
}

static void test_syscalls_monotonic(void)
{
	const __u64 busy[] = { 2000000 };
	struct model *m = model__new();
	struct sink_prom *sp = sink_prom__open(NULL, false, NULL, 0);
	struct loop_thread *t;
	char *text;

	model__ingest(m, record(FAKE_PID, FAKE_PID, busy, 1));
	thread__label(m, FAKE_PID);
	model__clear_syscalls(m);
	syscall__add(m, FAKE_PID, "server", SYS_clock_nanosleep, 3, 90000000);
	free(render(sp, m, 0));

	/* the kernel's LRU evicted the entry: what it counted stays */
	model__clear_syscalls(m);
	text = render(sp, m, 1);
	CHECK(sample(text, CALLS("clock_nanosleep", LBL)) == 3, "evicted: kept:\n%s", text);
	free(text);

	/* the entry comes back from zero: counted on top */
	syscall__add(m, FAKE_PID, "server", SYS_clock_nanosleep, 1, 30000000);
	text = render(sp, m, 2);
	CHECK(sample(text, CALLS("clock_nanosleep", LBL)) == 4, "recreated: on top:\n%s", text);
	CHECK(strstr(text, SECS("clock_nanosleep", LBL) " 0.120000000\n"), "seconds on top");
	free(text);
	model__clear_syscalls(m);
	syscall__add(m, FAKE_PID, "server", SYS_clock_nanosleep, 2, 60000000);
	text = render(sp, m, 3);
	CHECK(sample(text, CALLS("clock_nanosleep", LBL)) == 5, "then grows by its delta");
	free(text);

	/* evicted and recreated between two writes, now below the last value */
	model__clear_syscalls(m);
	syscall__add(m, FAKE_PID, "server", SYS_clock_nanosleep, 1, 30000000);
	text = render(sp, m, 4);
	CHECK(sample(text, CALLS("clock_nanosleep", LBL)) == 6, "went back: on top:\n%s", text);
	free(text);

	/*
	 * The process exits and the model forgets its thread; the kernel keeps
	 * the aggregate: the series keeps its labels instead of moving to exe="".
	 */
	t = thread__find(m, FAKE_PID);
	model__forget(m, FAKE_PID);
	free(t);
	text = render(sp, m, 5);
	CHECK(sample(text, CALLS("clock_nanosleep", LBL)) == 6, "labels kept:\n%s", text);
	CHECK(sample(text, CALLS("clock_nanosleep", NOLBL)) == -1, "no exe=\"\" series");
	free(text);

	/* its pid is reused by another program: a new series, the old one keeps 6 */
	model__clear_syscalls(m);
	syscall__add(m, FAKE_PID, "other", SYS_clock_nanosleep, 1, 30000000);
	text = render(sp, m, 6);
	CHECK(sample(text, CALLS("clock_nanosleep", LBL)) == 6, "old process kept:\n%s", text);
	CHECK(sample(text, CALLS("clock_nanosleep",
				 "comm=\"other\",exe=\"\",cgroup=\"\"")) == 1, "new process");
	free(text);
	sink_prom__close(sp);
	model__free(m);
}

static void test_syscalls_grace_period(void)
{
	const __u64 busy[] = { 2000000 };
	struct model *m = model__new();
	struct sink_prom *per = sink_prom__open(NULL, true, NULL, 0);
	struct sink_prom *agg = sink_prom__open(NULL, false, NULL, 0);
	const char *series = CALLS("futex", NOLBL ",pid=\"4190000\"");
	char *text;

	model__ingest(m, record(FAKE_PID, FAKE_PID, busy, 1));
	model__clear_syscalls(m);
	syscall__add(m, FAKE_PID, "server", SYS_futex, 4, 80000000);
	free(render(per, m, 100));
	free(render(agg, m, 100));
	rec.flags = LW_THREAD_EXITED;
	model__ingest(m, &rec);
	text = render(per, m, 200);
	CHECK(sample(text, series) == 4, "exited: kept during the grace period:\n%s", text);
	free(text);
	text = render(per, m, 200 + PROM_GRACE_S + 1);
	CHECK(sample(text, series) == -1, "gone after the grace period:\n%s", text);
	free(text);
	text = render(per, m, 200 + PROM_GRACE_S + 60);
	CHECK(sample(text, series) == -1, "and does not come back while the kernel has it");
	free(text);
	text = render(agg, m, 200 + PROM_GRACE_S + 60);
	CHECK(sample(text, CALLS("futex", NOLBL)) == 4, "aggregate series stay:\n%s", text);
	free(text);
	sink_prom__close(per);
	sink_prom__close(agg);
	model__free(m);
}

int main(void)
{
	test_buckets_exact();
	test_escaping();
	test_aggregate_and_per_pid();
	test_monotonic();
	test_grace_period();
	test_syscalls_labelled_like_their_loops();
	test_syscalls_monotonic();
	test_syscalls_grace_period();
	test_container_id();
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
