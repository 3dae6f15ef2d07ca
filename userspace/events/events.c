// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "events/decode.h"
#include "events/events.h"
#include "model/model.h"
#include "sinks/sink.h"
#include "tracker/tracker.h"

static void events__stall(struct events *ev, const struct lw_stall_event *e)
{
	struct stall_report r;

	decoder__stall(ev->decoder, e, &r);
	tracker__comm(ev->tracker, r.pid, r.comm);
	/* throttled: the quota that did it names the stall */
	if (r.throttled_ns) {
		tracker__cpu_limit(ev->tracker, r.pid, &r.limit);
		stall_report__top(&r, r.top, sizeof(r.top));
	}
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
