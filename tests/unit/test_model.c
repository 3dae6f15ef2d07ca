// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The model on its own, driven through a fake source: it reads nothing but
 * what a drain hands it (no /proc), names live threads through the source,
 * keeps the kernel's names once a thread is gone, sorts aggregates, and
 * forgets a thread for good.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include "check.h"
#include "model/model.h"

static struct lw_loop rec;
static struct lw_syscall_key skeys[3];
static struct lw_syscall_stats sstats[3];
static int nsyscalls;
static bool alive = true;
static int names_asked;

static int fake__loops(void *ctx, void (*fn)(const struct lw_loop *, void *), void *arg)
{
	(void)ctx;
	fn(&rec, arg);
	return 1;
}

static int fake__syscalls(void *ctx,
			  void (*fn)(const struct lw_syscall_key *, const struct lw_syscall_stats *,
				     void *),
			  void *arg)
{
	(void)ctx;
	for (int i = 0; i < nsyscalls; i++)
		fn(&skeys[i], &sstats[i], arg);
	return nsyscalls;
}

static bool fake__names(void *ctx, __u32 pid, __u32 tid, char *comm, char *thread)
{
	(void)ctx;
	(void)pid;
	(void)tid;
	names_asked++;
	if (!alive)
		return false;
	snprintf(comm, LW_COMM_LEN, "renamed");
	snprintf(thread, LW_COMM_LEN, "worker-1");
	return true;
}

static void fake__facts(void *ctx, __u32 pid, char *exe, size_t exe_len, char *cgroup,
			size_t cgroup_len, struct cgroup_identity *cg)
{
	(void)ctx;
	snprintf(exe, exe_len, "/usr/bin/server-%u", pid);
	snprintf(cgroup, cgroup_len, "/system.slice/server.service");
	cgroup__identity(cgroup, cg);
}

static const struct model_source src = {
	.loops = fake__loops,
	.syscalls = fake__syscalls,
	.names = fake__names,
	.facts = fake__facts,
};

static void record__set(__u32 pid, __u32 tid, __u64 iterations)
{
	memset(&rec, 0, sizeof(rec));
	rec.pid = pid;
	rec.tid = tid;
	rec.start_ns = 7;
	strcpy(rec.comm, "kernel-name");
	strcpy(rec.thread, "kthread");
	rec.iterations = iterations;
	rec.busy_ns = iterations * 1000000;
	rec.busy_hist.counts[lw_hist_bucket(1000000)] = iterations;
}

static void syscall__set(int i, __u32 pid, int nr, __u64 total_ns)
{
	skeys[i] = (struct lw_syscall_key){ .pid = pid, .nr = nr };
	memset(&sstats[i], 0, sizeof(sstats[i]));
	strcpy(sstats[i].comm, "srv\033[2Jx");
	sstats[i].count = 1;
	sstats[i].total_ns = total_ns;
	sstats[i].max_ns = total_ns;
}

static void test_names_and_facts(void)
{
	struct model *m = model__new(10000000);
	struct loop_thread *t;

	record__set(100, 101, 5);
	model__drain(m, &src, MODEL_LOOPS);
	CHECK(m->nthreads == 1, "one thread: %zu", m->nthreads);
	t = m->threads[0];
	CHECK(!strcmp(t->exe, "/usr/bin/server-100"), "exe from the source: %s", t->exe);
	CHECK(!strcmp(t->cgroup, "/system.slice/server.service"), "cgroup: %s", t->cgroup);
	CHECK(!strcmp(t->comm, "renamed") && !strcmp(t->thread, "worker-1"),
	      "live names from the source: %s/%s", t->comm, t->thread);
	/* gone: the names it had stay */
	alive = false;
	record__set(100, 101, 6);
	model__drain(m, &src, MODEL_LOOPS);
	CHECK(!strcmp(t->comm, "renamed"), "names kept once gone: %s", t->comm);
	/* exited: not asked any more */
	rec.flags = LW_THREAD_EXITED;
	model__drain(m, &src, MODEL_LOOPS);
	names_asked = 0;
	model__drain(m, &src, MODEL_LOOPS);
	CHECK(names_asked == 0 && t->exited, "an exited thread is not looked up: %d", names_asked);
	alive = true;
	model__free(m);
}

static void test_forget(void)
{
	struct model *m = model__new(0);

	record__set(200, 200, 3);
	model__drain(m, &src, MODEL_LOOPS);
	model__forget(m, m->threads[0]);
	CHECK(m->nthreads == 0, "forgotten");
	/* the hash forgot it too: the same record makes a new thread */
	model__drain(m, &src, MODEL_LOOPS);
	CHECK(m->nthreads == 1 && m->threads[0]->snap.iterations == 3, "back as new");
	model__free(m);
}

static void test_aggregates(void)
{
	struct model *m = model__new(0);

	/* nothing to drain: no aggregates, no sort of an empty array */
	nsyscalls = 0;
	model__drain(m, &src, MODEL_AGGREGATES);
	CHECK(m->nsyscalls == 0 && m->nprobes == 0, "empty");
	syscall__set(0, 300, SYS_read, 1000);
	syscall__set(1, 300, SYS_futex, 9000);
	syscall__set(2, 301, SYS_fsync, 5000);
	nsyscalls = 3;
	model__drain(m, &src, MODEL_AGGREGATES);
	CHECK(m->nsyscalls == 3, "three");
	CHECK(!strcmp(m->syscalls[0].name, "futex") && !strcmp(m->syscalls[1].name, "fsync") &&
	      !strcmp(m->syscalls[2].name, "read"), "most blocked time first: %s %s %s",
	      m->syscalls[0].name, m->syscalls[1].name, m->syscalls[2].name);
	CHECK(!strchr(m->syscalls[0].comm, '\033'), "kernel names sanitized: %s",
	      m->syscalls[0].comm);
	/* the next drain replaces, never adds */
	nsyscalls = 1;
	model__drain(m, &src, MODEL_AGGREGATES);
	CHECK(m->nsyscalls == 1, "replaced: %zu", m->nsyscalls);
	model__free(m);
}

int main(void)
{
	test_names_and_facts();
	test_forget();
	test_aggregates();
	return check__report();
}
