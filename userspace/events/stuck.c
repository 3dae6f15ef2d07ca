// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Hung loops, live: a loop thread inside one iteration for --stuck-after is
 * reported from its kernel record as the model last drained it (no event
 * comes from the kernel until the iteration ends), then again every
 * --stuck-every while it lasts.
 */
#include <stdlib.h>
#include "events/decode.h"
#include "events/events.h"
#include "model/model.h"
#include "sinks/sink.h"

/* hung threads followed at once; more are reported as they come, unrepeated */
#define STUCK_MAX 256

struct stuck_entry {
	__u32 tid;
	__u64 thread_start_ns;	/* tids are reused */
	__u64 busy_start_ns;	/* which iteration */
	__u64 next_ns;		/* when it is reported again */
	int nth;
	bool seen;
};

struct stuck_watch {
	__u64 after_ns;
	__u64 every_ns;
	int n;
	struct stuck_entry v[STUCK_MAX];
};

struct stuck_watch *stuck_watch__new(__u64 after_ns, __u64 every_ns)
{
	struct stuck_watch *w = calloc(1, sizeof(*w));

	if (w) {
		w->after_ns = after_ns;
		w->every_ns = every_ns;
	}
	return w;
}

void stuck_watch__free(struct stuck_watch *w)
{
	free(w);
}

static struct stuck_entry *stuck__find(struct stuck_watch *w, const struct loop_thread *t)
{
	for (int i = 0; i < w->n; i++) {
		struct stuck_entry *e = &w->v[i];

		if (e->tid == t->tid && e->thread_start_ns == t->start_ns &&
		    e->busy_start_ns == t->snap.busy_start_ns)
			return e;
	}
	return NULL;
}

static struct stuck_entry *stuck__add(struct stuck_watch *w, const struct loop_thread *t)
{
	struct stuck_entry *e;

	if (w->n >= STUCK_MAX)
		return NULL;
	e = &w->v[w->n++];
	*e = (struct stuck_entry){
		.tid = t->tid,
		.thread_start_ns = t->start_ns,
		.busy_start_ns = t->snap.busy_start_ns,
	};
	return e;
}

static void stuck__report(struct events *ev, const struct loop_thread *t, __u64 now_ns, int nth)
{
	struct stuck_report r;

	decoder__stuck(ev->decoder, &t->snap, now_ns, t->run_delay_known ? &t->run_delay_ns : NULL,
		       &r);
	r.nth = nth;
	sinks__stuck(ev->sinks, &r);
	stuck_report__free(&r);
}

__u64 events__stuck(struct events *ev, __u64 now_ns)
{
	struct stuck_watch *w = ev->stuck;
	const struct model *m = ev->model;
	__u64 next = 0;
	int k = 0;

	if (!w || !w->after_ns)
		return 0;
	for (int i = 0; i < w->n; i++)
		w->v[i].seen = false;
	for (size_t i = 0; i < m->nthreads; i++) {
		const struct loop_thread *t = m->threads[i];
		struct stuck_entry *e;
		__u64 due;

		if (t->exited || t->snap.in_wait || !t->snap.busy_start_ns)
			continue;
		e = stuck__find(w, t);
		due = e ? e->next_ns : t->snap.busy_start_ns + w->after_ns;
		if (now_ns >= due) {
			if (!e)
				e = stuck__add(w, t);
			stuck__report(ev, t, now_ns, e ? ++e->nth : 1);
			due = now_ns + w->every_ns;
			if (e)
				e->next_ns = due;
		}
		if (e)
			e->seen = true;
		if (!next || due < next)
			next = due;
	}
	/* iterations that ended, threads gone: forgotten */
	for (int i = 0; i < w->n; i++) {
		if (w->v[i].seen)
			w->v[k++] = w->v[i];
	}
	w->n = k;
	return next;
}
