// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "dispatch.h"
#include "sink.h"

static void dispatch__stall(struct dispatch *d, const struct lw_stall_event *e)
{
	struct stall_report r;

	if (attributor__stall(d->attr, e, &r))
		return;
	if (d->alerter)
		alerter__stall(d->alerter, &r);
	/* sent up only for an --alert-ms below --threshold: not a stall */
	if (r.duration_ns < d->stall_threshold_ns) {
		stall_report__free(&r);
		return;
	}
	model__add_stall(d->model, &r);
	if (d->output == DISPATCH_JSON)
		sink_json__stall(d->out, &r);
	else if (d->output == DISPATCH_TEXT)
		sink_text__stall(d->out, &r);
	stall_report__free(&r);
}

static void dispatch__block(struct dispatch *d, const struct lw_block_event *e)
{
	struct block_report r;

	if (attributor__block(d->attr, e, &r))
		return;
	if (d->output == DISPATCH_JSON)
		sink_json__block(d->out, &r);
	else if (d->output == DISPATCH_TEXT)
		sink_text__block(d->out, &r);
	block_report__free(&r);
}

static void dispatch__probe(struct dispatch *d, const struct lw_probe_event *e)
{
	struct probe_report r;

	if (attributor__probe(d->attr, e, &r))
		return;
	if (d->output == DISPATCH_JSON)
		sink_json__probe(d->out, &r);
	else if (d->output == DISPATCH_TEXT)
		sink_text__probe(d->out, &r);
	probe_report__free(&r);
}

/* A new loop thread: read its maps while it lives, attach its probes. */
static void dispatch__new_loop(struct dispatch *d, const struct lw_new_loop_event *e)
{
	attributor__prefetch(d->attr, e->pid);
	probes__scan_pid(d->probes, (int)e->pid);
}

void dispatch__event(const void *event, size_t size, void *ctx)
{
	struct dispatch *d = ctx;
	__u32 type;

	if (!d->attr || size < sizeof(type))
		return;
	type = *(const __u32 *)event;
	if (type == LW_EV_STALL && size >= sizeof(struct lw_stall_event))
		dispatch__stall(d, event);
	else if (type == LW_EV_BLOCK && size >= sizeof(struct lw_block_event))
		dispatch__block(d, event);
	else if (type == LW_EV_NEW_LOOP && size >= sizeof(struct lw_new_loop_event))
		dispatch__new_loop(d, event);
	else if (type == LW_EV_PROBE && size >= sizeof(struct lw_probe_event))
		dispatch__probe(d, event);
}
