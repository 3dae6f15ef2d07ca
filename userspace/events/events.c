// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "events/decode.h"
#include "events/events.h"
#include "model/model.h"
#include "sinks/sink.h"
#include "tracker/tracker.h"

/* The longest named blocking call of the stall's thread inside it, if one was reported. */
static bool events__peer_of(const struct events *ev, struct stall_report *r)
{
	const struct recent_block *best = NULL;
	double end = r->ts + (double)r->duration_ns / 1e9;

	for (unsigned int i = 0; i < EVENTS_RECENT_BLOCKS; i++) {
		const struct recent_block *b = &ev->recent[i];

		/* a microsecond of slack: both ends went through one clock conversion */
		if (b->tid != r->tid || !b->path[0] || b->ts < r->ts - 1e-6 ||
		    b->ts + (double)b->duration_ns / 1e9 > end + 1e-6)
			continue;
		if (!best || b->duration_ns > best->duration_ns)
			best = b;
	}
	if (!best)
		return false;
	snprintf(r->peer.syscall, sizeof(r->peer.syscall), "%s", best->syscall);
	snprintf(r->peer.path, sizeof(r->peer.path), "%s", best->path);
	return true;
}

static void events__stall(struct events *ev, const struct lw_stall_event *e)
{
	struct stall_report r;
	bool retop = false;

	decoder__stall(ev->decoder, e, &r);
	tracker__comm(ev->tracker, r.pid, r.comm);
	/* throttled: the quota that did it names the stall */
	if (r.throttled_ns) {
		tracker__cpu_limit(ev->tracker, r.pid, &r.limit);
		retop = true;
	}
	if (r.cause == CAUSE_BLOCKED && events__peer_of(ev, &r))
		retop = true;
	/* another process woke it: walk that one's stacks as well as the loop's own */
	for (int i = 0; i < r.nwakers; i++) {
		if (r.wakers[i].tid != LW_WAKER_INTERRUPT && r.wakers[i].pid != r.pid)
			tracker__waker(ev->tracker, r.wakers[i].pid);
	}
	if (retop)
		stall_report__top(&r, r.top, sizeof(r.top));
	sinks__slow(ev->sinks, &r);
	/* sent up only for an --alert-ms below --threshold: not a stall */
	if (r.duration_ns >= ev->stall_threshold_ns) {
		model__add_stall(ev->model, &r);
		sinks__stall(ev->sinks, &r);
	}
	stall_report__free(&r);
}

static void events__block(struct events *ev, const struct lw_block_event *e)
{
	struct block_report r;

	decoder__block(ev->decoder, e, &r);
	tracker__comm(ev->tracker, r.pid, r.comm);
	if (r.path[0]) {
		struct recent_block *b = &ev->recent[ev->nrecent++ % EVENTS_RECENT_BLOCKS];

		b->tid = r.tid;
		b->ts = r.ts;
		b->duration_ns = r.duration_ns;
		snprintf(b->syscall, sizeof(b->syscall), "%s", r.syscall);
		snprintf(b->path, sizeof(b->path), "%s", r.path);
	}
	sinks__block(ev->sinks, &r);
	block_report__free(&r);
}

static void events__probe(struct events *ev, const struct lw_probe_event *e)
{
	struct probe_report r;

	decoder__probe(ev->decoder, e, &r);
	tracker__comm(ev->tracker, r.pid, r.comm);
	sinks__probe(ev->sinks, &r);
	probe_report__free(&r);
}

void events__handle(const void *event, size_t size, void *ctx)
{
	struct events *ev = ctx;
	__u32 type;

	if (!ev->decoder || size < sizeof(type))
		return;
	type = *(const __u32 *)event;
	if (type == LW_EV_STALL && size >= sizeof(struct lw_stall_event))
		events__stall(ev, event);
	else if (type == LW_EV_BLOCK && size >= sizeof(struct lw_block_event))
		events__block(ev, event);
	else if (type == LW_EV_NEW_LOOP && size >= sizeof(struct lw_new_loop_event))
		tracker__new_loop(ev->tracker, ((const struct lw_new_loop_event *)event)->pid);
	else if (type == LW_EV_PROBE && size >= sizeof(struct lw_probe_event))
		events__probe(ev, event);
}
