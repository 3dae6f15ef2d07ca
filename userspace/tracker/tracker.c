// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kernel/collector.h"
#include "proc/kubelet.h"
#include "proc/procs.h"
#include "symbols/python.h"
#include "symbols/symbols.h"
#include "symbols/v8.h"
#include "tracker/cfitables.h"
#include "tracker/probes.h"
#include "tracker/tracker.h"

#define TRACKER_HASH 1024
/* processes set up at once; past this many, new loop processes go unprobed */
#define TRACKER_MAX 8192

struct tracked {
	__u32 pid;
	__u64 start_time;
	__u64 image;		/* the program image set up (proc__image) */
	char comm[LW_COMM_LEN];	/* its name then: events carry the name at the loop's start */
	bool python;		/* has an entry in the walker's table */
	bool v8;		/* has an entry in the V8 walker's table, */
	struct lw_v8_proc v8cfg;	/* this one */
	struct tracked *hnext;
};

struct tracker {
	struct collector *c;
	struct procs *procs;
	struct symbols *syms;
	struct probes *probes;
	FILE *notes;		/* one line per node process found, or NULL */
	struct cfi_tables *cfi;
	struct tracked *hash[TRACKER_HASH];
	size_t n;
	const char *kubelet_logs;
};

struct tracker *tracker__new(struct collector *c, struct procs *procs, struct symbols *syms,
			     struct probes *probes, FILE *notes)
{
	struct tracker *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->c = c;
	t->procs = procs;
	t->syms = syms;
	t->probes = probes;
	t->notes = notes;
	t->cfi = cfi_tables__new(c);
	if (!t->cfi) {
		free(t);
		return NULL;
	}
	return t;
}

void tracker__free(struct tracker *t)
{
	if (!t)
		return;
	for (unsigned int h = 0; h < TRACKER_HASH; h++) {
		while (t->hash[h]) {
			struct tracked *k = t->hash[h];

			t->hash[h] = k->hnext;
			free(k);
		}
	}
	cfi_tables__free(t->cfi);
	free(t);
}

static struct tracked **tracker__slot(struct tracker *t, __u32 pid)
{
	struct tracked **pp = &t->hash[pid % TRACKER_HASH];

	while (*pp && (*pp)->pid != pid)
		pp = &(*pp)->hnext;
	return pp;
}

/* The process is gone, or its pid names another now: its kernel entries go. */
static void tracker__drop(struct tracker *t, struct tracked **pp)
{
	struct tracked *k = *pp;

	if (k->python)
		collector__set_python(t->c, k->pid, NULL);
	if (k->v8)
		collector__set_v8(t->c, k->pid, NULL);
	cfi_tables__drop(t->cfi, k->pid);
	*pp = k->hnext;
	free(k);
	t->n--;
}

/*
 * A CPython process: the BPF side walks its frames from now on. Anything
 * else drops what a previous owner of the pid left.
 */
static bool tracker__setup_python(struct tracker *t, struct proc *p)
{
	struct lw_py_proc cfg;
	__u32 pid = (__u32)proc__pid(p);

	if (python__detect(p, &cfg, NULL, 0) >= 0 && !collector__set_python(t->c, pid, &cfg))
		return true;
	collector__set_python(t->c, pid, NULL);
	return false;
}

/*
 * A node process: the BPF side walks its JS frames from now on, or, when
 * its V8 metadata is unusable, marks its stacks so. Said once per process.
 * Again at each rescan: V8's code range is re-read, the kernel told only
 * of a change.
 */
static void tracker__setup_v8(struct tracker *t, struct proc *p, struct tracked *k)
{
	struct lw_v8_proc cfg;
	char desc[160], comm[LW_COMM_LEN];
	int r = symbols__detect_v8(t->syms, p, &cfg, desc, sizeof(desc));

	if (r < 0) {
		if (k->v8)
			collector__set_v8(t->c, k->pid, NULL);
		k->v8 = false;
		return;
	}
	if (k->v8 && !memcmp(&cfg, &k->v8cfg, sizeof(cfg)))
		return;
	if (collector__set_v8(t->c, k->pid, &cfg))
		return;
	if (!k->v8 && t->notes) {
		if (!proc__comm(p, (int)k->pid, comm, sizeof(comm)))
			snprintf(comm, sizeof(comm), "?");
		fprintf(t->notes, "loopwatch: %s[%u]: JavaScript frames %s (%s)\n", comm, k->pid,
			r == V8_UNSUPPORTED ? "not walked, marked" : "walked", desc);
	}
	k->v8 = true;
	k->v8cfg = cfg;
}

/* The same process running the same program as when it was set up. */
static bool tracked__same(const struct tracked *k, const struct proc *p)
{
	return k->start_time == proc__start_time(p) &&
	       (!k->image || !proc__image(p) || k->image == proc__image(p));
}

void tracker__new_loop(struct tracker *t, __u32 pid)
{
	struct proc *p = procs__get(t->procs, (int)pid);
	struct tracked **pp, *k;

	if (!p)
		return;
	pp = tracker__slot(t, pid);
	if (*pp && tracked__same(*pp, p))
		return;	/* another thread of a process already set up */
	if (*pp)
		tracker__drop(t, pp);
	if (t->n >= TRACKER_MAX)
		return;
	k = calloc(1, sizeof(*k));
	if (!k)
		return;
	k->pid = pid;
	k->start_time = proc__start_time(p);
	k->image = proc__image(p);
	if (!proc__comm(p, (int)pid, k->comm, sizeof(k->comm)))
		k->comm[0] = '\0';
	/* the pid may have served another process before: nothing of it may stay */
	symbols__forget(t->syms, (int)pid);
	/* its maps now, while it surely lives: a stall just before exit still resolves */
	proc__maps(p, true);
	/*
	 * Cheap first, and the probes before the unwind tables (10-200 ms a
	 * file, seen once): a call made right after the start is counted.
	 */
	k->python = tracker__setup_python(t, p);
	if (!k->python)
		tracker__setup_v8(t, p, k);
	probes__scan(t->probes, p);
	cfi_tables__update(t->cfi, p);
	symbols__warm(t->syms, (int)pid);
	k->hnext = *pp;
	*pp = k;
	t->n++;
}

void tracker__rescan(struct tracker *t)
{
	probes__begin_scan(t->probes);
	for (unsigned int h = 0; h < TRACKER_HASH; h++) {
		struct tracked **pp = &t->hash[h];

		while (*pp) {
			struct proc *p = procs__get(t->procs, (int)(*pp)->pid);

			if (!p || !proc__alive(p) || !tracked__same(*pp, p)) {
				__u32 pid = (*pp)->pid;

				tracker__drop(t, pp);
				/* it ran exec: a new program, set up afresh (runtime, probes) */
				if (p && proc__alive(p)) {
					tracker__new_loop(t, pid);
					continue;
				}
				/*
				 * Gone since the last rescan, its late events long handled:
				 * what was kept of it (maps, symbols) goes too, so memory
				 * comes back down after a churn of processes.
				 */
				if (p && !proc__alive(p)) {
					symbols__forget(t->syms, (int)pid);
					procs__forget(t->procs, (int)pid);
				}
				continue;
			}
			/* Python imports _json on first use: libraries come late */
			proc__maps(p, true);
			if ((*pp)->v8)
				tracker__setup_v8(t, p, *pp);
			cfi_tables__update(t->cfi, p);
			probes__scan(t->probes, p);
			pp = &(*pp)->hnext;
		}
	}
	probes__end_scan(t->probes);
}

bool tracker__comm(struct tracker *t, __u32 pid, char *comm)
{
	struct tracked *k = *tracker__slot(t, pid);

	if (!k || !k->comm[0])
		return false;
	memcpy(comm, k->comm, LW_COMM_LEN);
	return true;
}

bool tracker__names(struct tracker *t, __u32 pid, __u32 tid, char *comm, char *thread)
{
	struct proc *p = procs__get(t->procs, (int)pid);

	return p && proc__alive(p) && proc__comm(p, (int)pid, comm, LW_COMM_LEN) &&
	       proc__comm(p, (int)tid, thread, LW_COMM_LEN);
}

void tracker__started_as(struct tracker *t, __u32 pid, char *buf, size_t len)
{
	struct proc *p = procs__get(t->procs, (int)pid);

	if (!p || !proc__started_as(p, buf, len))
		buf[0] = '\0';
}

bool tracker__run_delay(struct tracker *t, __u32 pid, __u32 tid, __u64 *ns)
{
	struct proc *p = procs__get(t->procs, (int)pid);
	uint64_t v;

	if (!p || !proc__alive(p) || !proc__run_delay(p, (int)tid, &v))
		return false;
	*ns = v;
	return true;
}

void tracker__facts(struct tracker *t, __u32 pid, char *exe, size_t exe_len, char *cgroup,
		    size_t cgroup_len)
{
	struct proc *p = procs__get(t->procs, (int)pid);

	exe[0] = cgroup[0] = '\0';
	if (!p)
		return;
	if (!proc__exe(p, exe, exe_len))
		exe[0] = '\0';
	if (!proc__cgroup(p, cgroup, cgroup_len))
		cgroup[0] = '\0';
}

void tracker__set_kubelet_logs(struct tracker *t, const char *log_dir)
{
	t->kubelet_logs = log_dir;
}

void tracker__k8s_names(struct tracker *t, const char *cgroup, struct k8s_names *out)
{
	struct cgroup_identity id;

	memset(out, 0, sizeof(*out));
	if (t->kubelet_logs && cgroup__identity(cgroup, &id) && id.kind == CGROUP_K8S)
		kubelet__names(t->kubelet_logs, id.pod_uid, id.container_id, out);
}

void tracker__probe_label(const struct tracker *t, __u32 id, char *buf, size_t len)
{
	probes__label(t->probes, id, buf, len);
}
