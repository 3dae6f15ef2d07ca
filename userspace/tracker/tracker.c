// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kernel/collector.h"
#include "lib/clock.h"
#include "proc/cpulimit.h"
#include "proc/kubelet.h"
#include "proc/procs.h"
#include "runtimes/runtimes.h"
#include "symbols/symbols.h"
#include "tracker/cfitables.h"
#include "tracker/probes.h"
#include "tracker/tracker.h"

#define TRACKER_HASH 1024
/* processes set up at once; past this many, new loop processes go unprobed */
#define TRACKER_MAX 8192
/* processes taken on only because they woke a loop into a stall (see tracker__waker) */
#define TRACKER_MAX_WAKERS 64

struct tracked {
	__u32 pid;
	__u64 start_time;
	__u64 image;		/* the program image set up (proc__image) */
	char comm[LW_COMM_LEN];	/* its name then: events carry the name at the loop's start */
	/*
	 * Its labels, read at its first wait (NEW_LOOP), before anything slow:
	 * a process that exits before the interval's drain still has them.
	 */
	char exe[256];
	char cgroup[256];
	struct cgroup_identity cg;
	bool pending;		/* its runtime, probes and unwind tables are still to come */
	bool waker;		/* no loop: taken on to walk its stacks (no probes) */
	int rt;			/* the runtime whose walker has its layout (enum lw_runtime), or -1 */
	void *layout;		/* that layout, as the kernel has it */
	/* its CPU quota as last read (at most once a second: every throttled stall asks) */
	struct cpu_limit limit;
	__u64 limit_read_ns;
	struct tracked *hnext;
};

struct tracker {
	struct collector *c;
	struct procs *procs;
	struct symbols *syms;
	struct runtimes *rts;
	struct probes *probes;
	FILE *notes;		/* one line per runtime process found, or NULL */
	struct cfi_tables *cfi;
	struct tracked *hash[TRACKER_HASH];
	size_t n;
	size_t nwakers;		/* of n, tracked only as wakers */
	size_t npending;	/* of them, taken on and not set up yet */
	struct kubelet_cache *kubelet;	/* NULL: no --kubelet-logs */
};

struct tracker *tracker__new(struct collector *c, struct procs *procs, struct symbols *syms,
			     struct runtimes *rts, struct probes *probes, FILE *notes)
{
	struct tracker *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->c = c;
	t->procs = procs;
	t->syms = syms;
	t->rts = rts;
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
			free(k->layout);
			free(k);
		}
	}
	cfi_tables__free(t->cfi);
	kubelet_cache__free(t->kubelet);
	free(t);
}

static struct tracked **tracker__slot(struct tracker *t, __u32 pid)
{
	struct tracked **pp = &t->hash[pid % TRACKER_HASH];

	while (*pp && (*pp)->pid != pid)
		pp = &(*pp)->hnext;
	return pp;
}

/* Its runtime's walker lets it go (it left the runtime, or is gone). */
static void tracked__leave_runtime(struct tracker *t, struct tracked *k)
{
	const struct runtime *rt;

	if (k->rt < 0)
		return;
	rt = runtimes__get(k->rt);
	collector__set_runtime(t->c, rt->procs_map, k->pid, NULL, rt->layout_size);
	k->rt = -1;
	free(k->layout);
	k->layout = NULL;
}

/* The process is gone, or its pid names another now: its kernel entries go. */
static void tracker__drop(struct tracker *t, struct tracked **pp)
{
	struct tracked *k = *pp;

	tracked__leave_runtime(t, k);
	cfi_tables__drop(t->cfi, k->pid);
	*pp = k->hnext;
	if (k->pending)
		t->npending--;
	if (k->waker)
		t->nwakers--;
	free(k);
	t->n--;
}

/*
 * The runtime that claims the process, the first in runtimes.c's table: its
 * walker reads the process's layout from now on, or its stacks get a marker
 * that says why not. Said once per process. Again at each rescan for a
 * runtime whose layout moves (V8's code range): the kernel told only of a
 * change.
 */
static void tracker__setup_runtime(struct tracker *t, struct proc *p, struct tracked *k)
{
	size_t max = runtimes__max_layout();
	char desc[160], comm[LW_COMM_LEN];
	void *layout = calloc(1, max);

	for (int id = 0; layout && id < LW_RT_N; id++) {
		const struct runtime *rt = runtimes__get(id);
		enum runtime_found r;

		if (k->rt >= 0 && k->rt != id)
			continue;
		memset(layout, 0, max);
		r = runtimes__detect(t->rts, id, p, layout, desc, sizeof(desc));
		if (r == RUNTIME_NONE) {
			tracked__leave_runtime(t, k);
			continue;
		}
		if (k->rt == id && !memcmp(layout, k->layout, rt->layout_size))
			break;
		if (collector__set_runtime(t->c, rt->procs_map, k->pid, layout, rt->layout_size))
			break;
		if (k->rt < 0 && t->notes) {
			if (!proc__comm(p, (int)k->pid, comm, sizeof(comm)))
				snprintf(comm, sizeof(comm), "?");
			fprintf(t->notes, "loopwatch: %s[%u]: %s frames %s (%s)\n", comm, k->pid,
				rt->frames, r == RUNTIME_MARKED ? "not walked, marked" : "walked",
				desc);
		}
		k->rt = id;
		free(k->layout);
		k->layout = layout;
		return;
	}
	free(layout);
}

/*
 * A process's executable and cgroup path, "" when unknown; a path longer
 * than cgroup_len ends in "...", cg is the identity of the whole path. False
 * when the executable could not be read (the process is gone, or a zombie).
 */
static bool facts__read(struct proc *p, char *exe, size_t exe_len, char *cgroup,
			size_t cgroup_len, struct cgroup_identity *cg)
{
	/* the kernel prints at most PATH_MAX of a cgroup path */
	char path[PATH_MAX];
	bool got_exe = proc__exe(p, exe, exe_len);

	if (!got_exe)
		exe[0] = '\0';
	cgroup__identity("", cg);
	cgroup[0] = '\0';
	if (!proc__cgroup(p, path, sizeof(path)))
		return got_exe;
	/* a kind node's pod paths pass 255 bytes: the innermost container is at the end */
	cgroup__identity(path, cg);
	if (cgroup_len >= 4 && strlen(path) >= cgroup_len)
		snprintf(cgroup, cgroup_len, "%.*s...", (int)(cgroup_len - 4), path);
	else
		snprintf(cgroup, cgroup_len, "%s", path);
	return got_exe;
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
	if (*pp && tracked__same(*pp, p)) {
		/* a waker that became a loop itself: its probes at the next rescan */
		if ((*pp)->waker) {
			(*pp)->waker = false;
			t->nwakers--;
		}
		return;	/* another thread of a process already set up */
	}
	if (*pp)
		tracker__drop(t, pp);
	if (t->n >= TRACKER_MAX)
		return;
	k = calloc(1, sizeof(*k));
	if (!k)
		return;
	k->pid = pid;
	k->rt = -1;
	k->start_time = proc__start_time(p);
	k->image = proc__image(p);
	if (!proc__comm(p, (int)pid, k->comm, sizeof(k->comm)))
		k->comm[0] = '\0';
	facts__read(p, k->exe, sizeof(k->exe), k->cgroup, sizeof(k->cgroup), &k->cg);
	/* the pid may have served another process before: nothing of it may stay */
	symbols__forget(t->syms, (int)pid);
	/* its maps now, while it surely lives: a stall just before exit still resolves */
	proc__maps(p, true);
	k->pending = true;
	t->npending++;
	k->hnext = *pp;
	*pp = k;
	t->n++;
}

void tracker__waker(struct tracker *t, __u32 pid)
{
	struct proc *p = procs__get(t->procs, (int)pid);
	struct tracked *k = *tracker__slot(t, pid);

	if (!p || (k && tracked__same(k, p)) || t->nwakers >= TRACKER_MAX_WAKERS)
		return;
	tracker__new_loop(t, pid);
	k = *tracker__slot(t, pid);
	if (k && k->pid == pid && k->pending && !k->waker) {
		k->waker = true;
		t->nwakers++;
	}
}

/*
 * The slow part of a new process's set-up: its runtime, its probes (files
 * read for their functions here, attached by probes' own thread), its unwind
 * tables (10-200 ms a file, seen once). Done after every new loop of a batch
 * of events had its labels read: eight processes starting at once all have
 * theirs, though some are gone before the eighth is set up. Cheap first, and
 * the probes before the unwind tables: a call made right after the start is
 * counted.
 */
static void tracker__setup(struct tracker *t, struct tracked *k)
{
	struct proc *p = procs__get(t->procs, (int)k->pid);

	k->pending = false;
	t->npending--;
	if (!p || !proc__alive(p) || !tracked__same(k, p))
		return;
	tracker__setup_runtime(t, p, k);
	if (!k->waker)
		probes__scan(t->probes, p);
	cfi_tables__update(t->cfi, p);
	symbols__warm(t->syms, (int)k->pid);
}

void tracker__settle(struct tracker *t)
{
	/* called at every wake-up of the main loop: nothing to walk, most times */
	probes__settle(t->probes);
	for (unsigned int h = 0; h < TRACKER_HASH && t->npending; h++) {
		for (struct tracked *k = t->hash[h]; k; k = k->hnext) {
			if (k->pending)
				tracker__setup(t, k);
		}
	}
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
			if ((*pp)->rt >= 0 && runtimes__get((*pp)->rt)->redetect)
				tracker__setup_runtime(t, p, *pp);
			cfi_tables__update(t->cfi, p);
			if (!(*pp)->waker)
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
		    size_t cgroup_len, struct cgroup_identity *cg)
{
	struct proc *p = procs__get(t->procs, (int)pid);
	struct tracked *k = *tracker__slot(t, pid);

	exe[0] = cgroup[0] = '\0';
	cgroup__identity("", cg);
	if (!p)
		return;
	/* live: as it is now (moved to another cgroup, say); gone: as it was at its start */
	if (proc__alive(p) && facts__read(p, exe, exe_len, cgroup, cgroup_len, cg))
		return;
	if (k && tracked__same(k, p)) {
		snprintf(exe, exe_len, "%s", k->exe);
		snprintf(cgroup, cgroup_len, "%s", k->cgroup);
		*cg = k->cg;
	}
}

#define TRACKER_LIMIT_AGE_NS 1000000000ULL

void tracker__cpu_limit(struct tracker *t, __u32 pid, struct cpu_limit *out)
{
	struct proc *p = procs__get(t->procs, (int)pid);
	struct tracked *k = *tracker__slot(t, pid);
	__u64 now = clock__mono_ns();

	memset(out, 0, sizeof(*out));
	if (!p)
		return;
	if (!k || !tracked__same(k, p)) {
		proc__cpu_limit(p, out);
		return;
	}
	/* gone: the quota it last ran under */
	if (proc__alive(p) && now - k->limit_read_ns >= TRACKER_LIMIT_AGE_NS) {
		proc__cpu_limit(p, &k->limit);
		k->limit_read_ns = now;
	}
	*out = k->limit;
}

void tracker__set_kubelet_logs(struct tracker *t, const char *log_dir)
{
	kubelet_cache__free(t->kubelet);
	/* out of memory: no names, as without the flag */
	t->kubelet = kubelet_cache__new(log_dir);
}

void tracker__k8s_names(struct tracker *t, const struct cgroup_identity *cg,
			struct k8s_names *out)
{
	memset(out, 0, sizeof(*out));
	if (t->kubelet && cg->kind == CGROUP_K8S)
		kubelet_cache__names(t->kubelet, cg->pod_uid, cg->container_id, out);
}

void tracker__probe_label(const struct tracker *t, __u32 id, char *buf, size_t len)
{
	probes__label(t->probes, id, buf, len);
}
