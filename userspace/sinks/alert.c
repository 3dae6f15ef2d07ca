// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include "lib/clock.h"
#include "lib/jsonw.h"
#include "model/report.h"
#include "sinks/rows.h"
#include "sinks/sink.h"

#define ALERT_PIDS 1024
/*
 * Alert programs running at once. A slow program and a stall per
 * millisecond (--alert-every 0, or many processes under churn) must not
 * become a fork bomb: past this many, an alert runs no program and is
 * counted.
 */
#define ALERT_MAX_CHILDREN 4
/* the least time a loop must have been watched in an interval for its lag to alert */
#define ALERT_LAG_MIN_NS 900000000ull

struct alert_pid {
	__u32 pid;
	char comm[LW_COMM_LEN];
	double last_ts;
	__u64 suppressed;
	/* the iteration last alerted while stuck: its stall, when it ends, is no news */
	__u32 stuck_tid;
	double stuck_start_ts;
	/* lag alerts keep their own pace: a stall's alert must not hold back the lag's */
	double lag_last_ts;
	__u64 lag_suppressed;
};

struct alert_opts {
	double alert_ms;	/* a stall at or over this alerts */
	const char *log_path;	/* NULL: log lines go to stderr */
	bool log_lines;		/* false: no log lines (the live view owns the terminal) */
	const char *exec_path;	/* NULL: run nothing */
	double every_s;		/* per-process rate limit; 0: none */
	FILE *json;		/* NULL: no JSON alert lines */
};

struct alerter {
	struct alert_opts opts;
	FILE *log;
	bool own_log;
	bool fork_failed;	/* said once */
	int children;		/* alert programs still running */
	__u64 not_run;		/* alerts whose program did not start: too many running */
	int log_err;		/* the alert log's last write error, said once */
	__u64 lost;		/* alert lines the log did not take */
	struct alert_pid pids[ALERT_PIDS];	/* open addressing by pid: bounded */
};

/* Each alert line starts with when it was raised (not when its stall began). */
static void alert_log__stamp(struct alerter *a)
{
	char when[40];

	time__rfc3339(when, sizeof(when), clock__wall());
	fputs(when, a->log);
	fputc(' ', a->log);
}

static void alert_pid__flush(struct alerter *a, const struct alert_pid *p)
{
	if (p->suppressed && a->opts.log_lines) {
		alert_log__stamp(a);
		fprintf(a->log, "loopwatch: ALERT %s[%u]: %llu more stalls held back by "
			"--alert-every\n", p->comm, p->pid, (unsigned long long)p->suppressed);
	}
	if (p->lag_suppressed && a->opts.log_lines) {
		alert_log__stamp(a);
		fprintf(a->log, "loopwatch: ALERT %s[%u]: %llu more lag alerts held back by "
			"--alert-every\n", p->comm, p->pid, (unsigned long long)p->lag_suppressed);
	}
}

/*
 * pid's rate-limit state. Probing keeps two pids that share a slot apart;
 * a full table gives up the least recently alerted pid, saying what it held.
 */
static struct alert_pid *alerter__slot(struct alerter *a, __u32 pid)
{
	struct alert_pid *oldest = NULL;

	for (unsigned int i = 0; i < ALERT_PIDS; i++) {
		struct alert_pid *p = &a->pids[(pid + i) % ALERT_PIDS];

		if (p->pid == pid)
			return p;
		if (!p->pid) {
			p->pid = pid;
			return p;
		}
		if (!oldest || p->last_ts < oldest->last_ts)
			oldest = p;
	}
	alert_pid__flush(a, oldest);
	memset(oldest, 0, sizeof(*oldest));
	oldest->pid = pid;
	return oldest;
}

/*
 * Append-only to a regular file: a FIFO would block the open until a reader
 * came (O_NONBLOCK fails it instead), a device (/dev/full) or a /proc or
 * /sys file would swallow the lines. 0, or -errno with the reason.
 */
static int alert_log__open(const char *path, const char **why)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK |
			    O_NOCTTY, 0644);
	struct statfs sfs;
	struct stat st;

	*why = NULL;
	if (fd < 0) {
		if (errno == ENXIO)
			*why = "is a FIFO; want a regular file";
		return fd;
	}
	if (fstat(fd, &st) || fstatfs(fd, &sfs)) {
		close(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode) || sfs.f_type == PROC_SUPER_MAGIC ||
	    sfs.f_type == SYSFS_MAGIC) {
		*why = "is not a regular file";
		close(fd);
		return -1;
	}
	return fd;
}

static bool alert__wanted(const struct sink_config *cfg)
{
	(void)cfg;
	return true;
}

static int alert__open(struct sink *s, const struct sink_config *cfg, char *err, size_t errlen)
{
	struct alerter *a = calloc(1, sizeof(*a));
	struct alert_opts *opts;
	bool tui = !cfg->json && !cfg->quiet && cfg->tty;
	int fd;

	if (!a) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	opts = &a->opts;
	opts->alert_ms = cfg->alert_ms;
	opts->log_path = cfg->alert_log;
	/* the live view owns the terminal; --quiet keeps stderr for errors */
	opts->log_lines = !tui && !cfg->quiet;
	opts->exec_path = cfg->alert_exec;
	opts->every_s = cfg->alert_every_s;
	opts->json = cfg->json ? cfg->out : NULL;
	a->log = stderr;
	if (opts->exec_path && access(opts->exec_path, X_OK)) {
		snprintf(err, errlen, "--alert-exec %s: %s", opts->exec_path, strerror(errno));
		goto fail;
	}
	if (opts->log_path) {
		const char *why;

		fd = alert_log__open(opts->log_path, &why);
		if (fd < 0 || !(a->log = fdopen(fd, "a"))) {
			snprintf(err, errlen, "--alert-log %s: %s", opts->log_path,
				 why ? why : strerror(errno));
			if (fd >= 0)
				close(fd);
			goto fail;
		}
		a->own_log = true;
		a->opts.log_lines = true;
	}
	s->priv = a;
	return 0;
fail:
	free(a);
	return -1;
}

static void children__reap(struct alerter *a)
{
	while (waitpid(-1, NULL, WNOHANG) > 0) {
		if (a->children > 0)
			a->children--;
	}
}

#define ALERT_VARS 12
#define ALERT_VAR_LEN 384

static void alert__run(struct alerter *a, char (*vars)[ALERT_VAR_LEN], int n);

/* The program gets the facts as LOOPWATCH_* variables: no shell ever sees them. */
static void alert__exec(struct alerter *a, const struct stall_report *r, __u64 suppressed,
			bool stuck)
{
	char vars[ALERT_VARS][ALERT_VAR_LEN];
	int n = 0;

	snprintf(vars[n++], sizeof(vars[0]), "LOOPWATCH_KIND=%s", stuck ? "stuck" : "stall");
	snprintf(vars[n++], sizeof(vars[0]), "LOOPWATCH_PID=%u", r->pid);
	snprintf(vars[n++], sizeof(vars[0]), "LOOPWATCH_TID=%u", r->tid);
	snprintf(vars[n++], sizeof(vars[0]), "LOOPWATCH_COMM=%s", r->comm);
	snprintf(vars[n++], sizeof(vars[0]), "LOOPWATCH_THREAD=%s", r->thread);
	snprintf(vars[n++], sizeof(vars[0]), "LOOPWATCH_LAG_MS=%.3f", (double)r->duration_ns / 1e6);
	snprintf(vars[n++], sizeof(vars[0]), "LOOPWATCH_CAUSE=%s", stall_cause__name(r->cause));
	snprintf(vars[n++], sizeof(vars[0]), "LOOPWATCH_TOP_FRAME=%s", r->top);
	snprintf(vars[n++], sizeof(vars[0]), "LOOPWATCH_SUPPRESSED=%llu",
		 (unsigned long long)suppressed);
	snprintf(vars[n++], sizeof(vars[0]), "LOOPWATCH_STUCK=%d", stuck);
	alert__run(a, vars, n);
}

static void alert__run(struct alerter *a, char (*vars)[ALERT_VAR_LEN], int n)
{
	char *envp[ALERT_VARS + 1], *argv[2];
	pid_t child;

	snprintf(vars[n++], ALERT_VAR_LEN, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:"
		 "/usr/bin:/sbin:/bin");
	for (int i = 0; i < n; i++)
		envp[i] = vars[i];
	envp[n] = NULL;
	argv[0] = (char *)a->opts.exec_path;
	argv[1] = NULL;
	children__reap(a);
	if (a->children >= ALERT_MAX_CHILDREN) {
		if (!a->not_run++)
			fprintf(stderr, "loopwatch: --alert-exec %s: %d still running, alerts run no "
				"program until one ends\n", a->opts.exec_path, a->children);
		return;
	}
	child = fork();
	if (child == 0) {
		execve(a->opts.exec_path, argv, envp);
		_exit(127);
	}
	if (child > 0)
		a->children++;
	if (child < 0 && !a->fork_failed) {
		fprintf(stderr, "loopwatch: --alert-exec %s: cannot start it: %s\n",
			a->opts.exec_path, strerror(errno));
		a->fork_failed = true;
	}
}

static void alert__json(struct alerter *a, const struct stall_report *r, __u64 suppressed,
			bool stuck)
{
	FILE *out = a->opts.json;

	fprintf(out, "{\"type\":\"alert\",\"kind\":\"%s\",\"ts\":%.6f,\"pid\":%u,\"tid\":%u,"
		"\"comm\":", stuck ? "stuck" : "stall", r->ts, r->pid, r->tid);
	json__string(out, r->comm);
	fputs(",\"thread\":", out);
	json__string(out, r->thread);
	fprintf(out, ",\"lag_ms\":%.3f,\"cause\":\"%s\",\"top\":", json__ms(r->duration_ns),
		stall_cause__name(r->cause));
	json__string(out, r->top);
	fprintf(out, ",\"suppressed\":%llu,\"stuck\":%s}\n", (unsigned long long)suppressed,
		stuck ? "true" : "false");
	fflush(out);
}

/* A disk full or a log gone bad is said once, and the lines lost are counted. */
static void alert_log__flush(struct alerter *a)
{
	int err = 0;

	if (fflush(a->log) || ferror(a->log))
		err = errno ? errno : EIO;
	clearerr(a->log);
	if (!err) {
		a->log_err = 0;
		return;
	}
	a->lost++;
	if (err != a->log_err)
		fprintf(stderr, "loopwatch: cannot write alerts to %s: %s\n",
			a->opts.log_path ? a->opts.log_path : "stderr", strerror(err));
	a->log_err = err;
}

/*
 * r: a slow iteration, or a stuck one so far. A hung loop alerts once per
 * iteration whatever --alert-every says: it is the alert that matters most.
 */
static void alert__fire(struct alerter *a, const struct stall_report *r, bool stuck)
{
	struct alert_pid *p;
	__u64 suppressed;

	if ((double)r->duration_ns < a->opts.alert_ms * 1e6)
		return;
	p = alerter__slot(a, r->pid);
	if (!stuck && p->stuck_tid == r->tid && p->stuck_start_ts == r->ts)
		return;
	if (!stuck && p->last_ts && a->opts.every_s > 0 && r->ts - p->last_ts < a->opts.every_s) {
		p->suppressed++;
		return;
	}
	memcpy(p->comm, r->comm, LW_COMM_LEN);
	suppressed = p->suppressed;
	p->suppressed = 0;
	p->last_ts = r->ts;
	if (stuck) {
		p->stuck_tid = r->tid;
		p->stuck_start_ts = r->ts;
	}
	if (a->opts.log_lines) {
		alert_log__stamp(a);
		fprintf(a->log, "loopwatch: ALERT %s[%u] thread %s[%u] %s %.1f ms (%s): %s",
			r->comm, r->pid, r->thread, r->tid, stuck ? "stuck for" : "stalled",
			(double)r->duration_ns / 1e6, stall_cause__name(r->cause), r->top);
		if (stuck)
			fputs(" (still running)", a->log);
		if (suppressed)
			fprintf(a->log, " (+%llu suppressed)", (unsigned long long)suppressed);
		fputc('\n', a->log);
		alert_log__flush(a);
	}
	if (a->opts.json)
		alert__json(a, r, suppressed, stuck);
	if (a->opts.exec_path)
		alert__exec(a, r, suppressed, stuck);
}

/*
 * A loop whose arrival-weighted p99 over the interval reached --alert-ms:
 * 1 event in 100 arriving meanwhile waited that long, whether the time came
 * from one long stall or from many shorter ones, none of them over the bar.
 */
static void alert__lag(struct alerter *a, const struct loop_thread *t, const struct model *m,
		       double ts)
{
	const struct arrival_lag *lag = &t->interval.arrival;
	char vars[ALERT_VARS][ALERT_VAR_LEN];
	struct alert_pid *p;
	__u64 suppressed;
	int n = 0;

	/* a p99 over a sliver of time (the last interval, cut short at exit) says little */
	if (lag->span_ns < ALERT_LAG_MIN_NS || (double)lag->p99_ns < a->opts.alert_ms * 1e6)
		return;
	p = alerter__slot(a, t->pid);
	if (p->lag_last_ts && a->opts.every_s > 0 && ts - p->lag_last_ts < a->opts.every_s) {
		p->lag_suppressed++;
		return;
	}
	memcpy(p->comm, t->comm, LW_COMM_LEN);
	suppressed = p->lag_suppressed;
	p->lag_suppressed = 0;
	p->lag_last_ts = ts;
	if (a->opts.log_lines) {
		alert_log__stamp(a);
		fprintf(a->log, "loopwatch: ALERT %s[%u] thread %s[%u] lag p99 %.1f ms over the last "
			"%.1f s (what an arriving event waits; %.1f %% of the time in iterations "
			"over %.0f ms; per iteration p99 %.2f ms)", t->comm, t->pid, t->thread, t->tid,
			(double)lag->p99_ns / 1e6, m->interval_s, 100.0 * lag->over_share,
			(double)lag->over_ns / 1e6, (double)t->interval.lag.p99_ns / 1e6);
		if (suppressed)
			fprintf(a->log, " (+%llu suppressed)", (unsigned long long)suppressed);
		fputc('\n', a->log);
		alert_log__flush(a);
	}
	if (a->opts.json) {
		FILE *out = a->opts.json;

		fprintf(out, "{\"type\":\"alert\",\"kind\":\"lag\",\"ts\":%.6f,\"pid\":%u,"
			"\"tid\":%u,\"comm\":", ts, t->pid, t->tid);
		json__string(out, t->comm);
		fputs(",\"thread\":", out);
		json__string(out, t->thread);
		fprintf(out, ",\"lag_ms\":%.3f,\"arrival_p99_ms\":%.3f,\"window_s\":%.3f,"
			"\"stall_share\":%.5f,\"iteration_p99_ms\":%.3f,\"suppressed\":%llu}\n",
			json__ms(lag->p99_ns), json__ms(lag->p99_ns), (double)lag->span_ns / 1e9,
			lag->over_share, json__ms(t->interval.lag.p99_ns),
			(unsigned long long)suppressed);
		fflush(out);
	}
	if (!a->opts.exec_path)
		return;
	snprintf(vars[n++], sizeof(vars[0]), "LOOPWATCH_KIND=lag");
	snprintf(vars[n++], sizeof(vars[0]), "LOOPWATCH_PID=%u", t->pid);
	snprintf(vars[n++], sizeof(vars[0]), "LOOPWATCH_TID=%u", t->tid);
	snprintf(vars[n++], sizeof(vars[0]), "LOOPWATCH_COMM=%s", t->comm);
	snprintf(vars[n++], sizeof(vars[0]), "LOOPWATCH_THREAD=%s", t->thread);
	snprintf(vars[n++], sizeof(vars[0]), "LOOPWATCH_LAG_MS=%.3f", (double)lag->p99_ns / 1e6);
	snprintf(vars[n++], sizeof(vars[0]), "LOOPWATCH_STALL_SHARE=%.5f", lag->over_share);
	snprintf(vars[n++], sizeof(vars[0]), "LOOPWATCH_SUPPRESSED=%llu",
		 (unsigned long long)suppressed);
	alert__run(a, vars, n);
}

static void alert__interval(struct sink *s, const struct model *m, double ts)
{
	for (size_t i = 0; i < m->nthreads; i++) {
		if (m->threads[i]->active)
			alert__lag(s->priv, m->threads[i], m, ts);
	}
}

static void alert__slow(struct sink *s, const struct stall_report *r)
{
	alert__fire(s->priv, r, false);
}

/* Without waiting for the iteration to end: once, at its first stuck report. */
static void alert__stuck(struct sink *s, const struct stuck_report *k)
{
	if (k->nth == 1)
		alert__fire(s->priv, &k->so_far, true);
}

static void alert__close(struct sink *s)
{
	struct alerter *a = s->priv;

	if (!a)
		return;
	for (int i = 0; i < ALERT_PIDS; i++)
		alert_pid__flush(a, &a->pids[i]);
	if (a->not_run)
		fprintf(stderr, "loopwatch: --alert-exec %s: %llu alerts ran no program: %d were "
			"still running\n", a->opts.exec_path, (unsigned long long)a->not_run,
			ALERT_MAX_CHILDREN);
	if (a->own_log)
		alert_log__flush(a);
	if (a->lost)
		fprintf(stderr, "loopwatch: %llu alert lines could not be written to %s\n",
			(unsigned long long)a->lost, a->opts.log_path ? a->opts.log_path : "stderr");
	/* programs still running finish on their own; only the finished are reaped */
	children__reap(a);
	if (a->own_log)
		fclose(a->log);
	free(a);
}

const struct sink_ops alert_sink = {
	.name = "alerts",
	.wanted = alert__wanted,
	.open = alert__open,
	.interval = alert__interval,
	.slow = alert__slow,
	.stuck = alert__stuck,
	.close = alert__close,
};
