// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include "alert.h"
#include "jsonw.h"

#define ALERT_PIDS 1024

struct alert_pid {
	__u32 pid;
	char comm[LW_COMM_LEN];
	double last_ts;
	__u64 suppressed;
};

struct alerter {
	struct alert_opts opts;
	FILE *log;
	bool own_log;
	struct alert_pid pids[ALERT_PIDS];	/* open addressing by pid: bounded */
};

static void alert_pid__flush(struct alerter *a, const struct alert_pid *p)
{
	if (p->suppressed && a->opts.log_lines)
		fprintf(a->log, "loopwatch: ALERT %s[%u]: %llu more stalls held back by "
			"--alert-every\n", p->comm, p->pid, (unsigned long long)p->suppressed);
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

struct alerter *alerter__new(const struct alert_opts *opts, char *err, size_t errlen)
{
	struct alerter *a = calloc(1, sizeof(*a));
	int fd;

	if (!a) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	a->opts = *opts;
	a->log = stderr;
	if (opts->exec_path && access(opts->exec_path, X_OK)) {
		snprintf(err, errlen, "--alert-exec %s: %s", opts->exec_path, strerror(errno));
		goto fail;
	}
	if (opts->log_path) {
		fd = open(opts->log_path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
			  0644);
		if (fd < 0 || !(a->log = fdopen(fd, "a"))) {
			snprintf(err, errlen, "--alert-log %s: %s", opts->log_path, strerror(errno));
			if (fd >= 0)
				close(fd);
			goto fail;
		}
		a->own_log = true;
		a->opts.log_lines = true;
	}
	return a;
fail:
	free(a);
	return NULL;
}

static void children__reap(void)
{
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

/* The program gets the facts as LOOPWATCH_* variables: no shell ever sees them. */
static void alert__exec(struct alerter *a, const struct stall_report *r, __u64 suppressed)
{
	char vars[9][384], *envp[10], *argv[2];
	pid_t child;
	int n = 0;

	snprintf(vars[n++], sizeof(vars[0]), "LOOPWATCH_PID=%u", r->pid);
	snprintf(vars[n++], sizeof(vars[0]), "LOOPWATCH_TID=%u", r->tid);
	snprintf(vars[n++], sizeof(vars[0]), "LOOPWATCH_COMM=%s", r->comm);
	snprintf(vars[n++], sizeof(vars[0]), "LOOPWATCH_THREAD=%s", r->thread);
	snprintf(vars[n++], sizeof(vars[0]), "LOOPWATCH_LAG_MS=%.3f", (double)r->duration_ns / 1e6);
	snprintf(vars[n++], sizeof(vars[0]), "LOOPWATCH_CAUSE=%s", stall_cause__name(r->cause));
	snprintf(vars[n++], sizeof(vars[0]), "LOOPWATCH_TOP_FRAME=%s", r->top);
	snprintf(vars[n++], sizeof(vars[0]), "LOOPWATCH_SUPPRESSED=%llu",
		 (unsigned long long)suppressed);
	snprintf(vars[n++], sizeof(vars[0]), "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:"
		 "/usr/bin:/sbin:/bin");
	for (int i = 0; i < n; i++)
		envp[i] = vars[i];
	envp[n] = NULL;
	argv[0] = (char *)a->opts.exec_path;
	argv[1] = NULL;
	children__reap();
	child = fork();
	if (child == 0) {
		execve(a->opts.exec_path, argv, envp);
		_exit(127);
	}
}

static void alert__json(struct alerter *a, const struct stall_report *r, __u64 suppressed)
{
	FILE *out = a->opts.json;

	fprintf(out, "{\"type\":\"alert\",\"ts\":%.6f,\"pid\":%u,\"tid\":%u,\"comm\":", r->ts,
		r->pid, r->tid);
	json__string(out, r->comm);
	fputs(",\"thread\":", out);
	json__string(out, r->thread);
	fprintf(out, ",\"lag_ms\":%.3f,\"cause\":\"%s\",\"top\":", json__ms(r->duration_ns),
		stall_cause__name(r->cause));
	json__string(out, r->top);
	fprintf(out, ",\"suppressed\":%llu}\n", (unsigned long long)suppressed);
	fflush(out);
}

void alerter__stall(struct alerter *a, const struct stall_report *r)
{
	struct alert_pid *p;
	__u64 suppressed;

	if (!a || (double)r->duration_ns < a->opts.alert_ms * 1e6)
		return;
	p = alerter__slot(a, r->pid);
	if (p->last_ts && a->opts.every_s > 0 && r->ts - p->last_ts < a->opts.every_s) {
		p->suppressed++;
		return;
	}
	memcpy(p->comm, r->comm, LW_COMM_LEN);
	suppressed = p->suppressed;
	p->suppressed = 0;
	p->last_ts = r->ts;
	if (a->opts.log_lines) {
		fprintf(a->log, "loopwatch: ALERT %s[%u] thread %s[%u] stalled %.1f ms (%s): %s",
			r->comm, r->pid, r->thread, r->tid, (double)r->duration_ns / 1e6,
			stall_cause__name(r->cause), r->top);
		if (suppressed)
			fprintf(a->log, " (+%llu suppressed)", (unsigned long long)suppressed);
		fputc('\n', a->log);
		fflush(a->log);
	}
	if (a->opts.json)
		alert__json(a, r, suppressed);
	if (a->opts.exec_path)
		alert__exec(a, r, suppressed);
}

void alerter__free(struct alerter *a)
{
	if (!a)
		return;
	for (int i = 0; i < ALERT_PIDS; i++)
		alert_pid__flush(a, &a->pids[i]);
	/* programs still running finish on their own; only the finished are reaped */
	children__reap();
	if (a->own_log)
		fclose(a->log);
	free(a);
}
